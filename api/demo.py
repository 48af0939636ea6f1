"""The demo photo ``make run`` serves for a first order (``DEMO_IMAGE_URL``).

A sunset over hills drawn by libvips, 2400x3000 pixels: an 8x10" photo print at 300 dpi. Made
on the first request and kept in the process; served only where ``DEMO_IMAGE_ENABLED`` is on
(the local settings), the JSON 404 elsewhere.
"""

from functools import cache

import pyvips
from django.conf import settings
from django.http import HttpRequest, HttpResponse

from api.envelope import error_response

WIDTH, HEIGHT = 2400, 3000


def _bands(bands: list[pyvips.Image]) -> pyvips.Image:
    return bands[0].bandjoin(bands[1:])


def _blend(weight: pyvips.Image, start: tuple[int, ...], end: tuple[int, ...]) -> pyvips.Image:
    """From ``start`` (weight 0) to ``end`` (weight 1), band by band."""
    return _bands([weight * (b - a) + a for a, b in zip(start, end, strict=True)])


def _wave(x: pyvips.Image, base: float, *waves: tuple[float, float, float]) -> pyvips.Image:
    """A horizon line: ``base`` plus sine waves of (amplitude, wavelength, phase in degrees)."""
    line = x * 0 + base
    for amplitude, wavelength, phase in waves:
        line = line + (x * (360 / wavelength) + phase).sin() * amplitude
    return line


@cache
def demo_photo_jpeg() -> bytes:
    xyz = pyvips.Image.xyz(WIDTH, HEIGHT)
    x, y = xyz[0], xyz[1]
    towards_horizon = y / (HEIGHT * 0.62)
    sky = _blend(
        (towards_horizon > 1).ifthenelse(1, towards_horizon), (38, 86, 168), (252, 178, 112)
    )
    sun_x, sun_y, sun_radius = WIDTH * 0.7, HEIGHT * 0.4, WIDTH * 0.08
    from_sun = ((x - sun_x) ** 2 + (y - sun_y) ** 2) ** 0.5
    near_sun = 1 - from_sun / (WIDTH * 0.45)
    glow = (near_sun > 0).ifthenelse(near_sun, 0) ** 2
    sky = sky + _bands([glow * 110, glow * 70, glow * 10])
    image = (from_sun < sun_radius).ifthenelse([255, 244, 214], sky)
    far_hills = _wave(
        x, HEIGHT * 0.58, (HEIGHT * 0.03, WIDTH * 0.9, 0), (HEIGHT * 0.012, WIDTH * 0.31, 40)
    )
    image = (y > far_hills).ifthenelse([96, 108, 148], image)
    near_hills = _wave(
        x, HEIGHT * 0.7, (HEIGHT * 0.05, WIDTH * 1.3, 120), (HEIGHT * 0.015, WIDTH * 0.4, 10)
    )
    grass = _blend((y - HEIGHT * 0.65) / (HEIGHT * 0.35), (74, 122, 66), (22, 56, 30))
    image = (y > near_hills).ifthenelse(grass, image)
    # A little grain, as a photograph has (and so the JPEG is not a flat drawing's).
    image = image + pyvips.Image.gaussnoise(WIDTH, HEIGHT, sigma=3, mean=0)
    image = image.cast("uchar").copy(interpretation="srgb")
    return bytes(image.jpegsave_buffer(Q=88, strip=True))


def demo_photo(request: HttpRequest) -> HttpResponse:
    if not settings.DEMO_IMAGE_ENABLED:
        return error_response("EndpointDoesNotExist", 404, {"path": request.path})
    if request.method not in ("GET", "HEAD"):
        return error_response("MethodNotAllowed", 405, {"method": request.method})
    return HttpResponse(demo_photo_jpeg(), content_type="image/jpeg")
