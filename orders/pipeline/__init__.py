"""The fulfilment pipeline: a state machine kept in the order rows, advanced by Celery tasks."""
