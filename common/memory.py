"""Long-running processes and Python's cyclic garbage collector.

A web or Celery worker process holds a large heap of objects that live as long as it does
(modules, settings, URL patterns, models' metadata). The collector's full collections walk all
of it, and a request or task that makes many objects (a page of orders is some 10,000 model
instances) triggers several of them: measured on a page of 100 orders, 15 to 20% of its CPU.
Freezing what exists once the process is ready takes those objects out of every later
collection; they are never freed anyway.
"""

import gc


def long_lived_objects_frozen() -> None:
    """Collect once, then move every object now tracked to the collector's permanent
    generation. Call when the process has loaded what it keeps (after the app, before work)."""
    gc.collect()
    gc.freeze()
