"""The site's static files middleware, which no view test reaches on its own."""

import asyncio

from asgiref.sync import iscoroutinefunction
from django.http import HttpResponse
from django.test import AsyncRequestFactory, RequestFactory

from project.middleware import StaticFilesMiddleware


def _middleware(tmp_path, get_response):
    (tmp_path / "app.css").write_text("body { margin: 0 }")
    middleware = StaticFilesMiddleware(get_response)
    middleware.add_files(str(tmp_path), prefix="static/")
    return middleware


def test_static_files_are_served_in_the_event_loop_and_the_rest_goes_on(tmp_path):
    async def view(request):
        return HttpResponse("the view")

    middleware = _middleware(tmp_path, view)
    assert iscoroutinefunction(middleware)  # Django calls it without a thread hop
    factory = AsyncRequestFactory()
    served = asyncio.run(middleware(factory.get("/static/app.css")))
    passed = asyncio.run(middleware(factory.get("/api/channels/")))
    assert served.status_code == 200 and b"".join(served.streaming_content) == b"body { margin: 0 }"
    assert passed.content == b"the view"


def test_under_wsgi_it_is_whitenoise_as_it_was(tmp_path):
    middleware = _middleware(tmp_path, lambda request: HttpResponse("the view"))
    assert not iscoroutinefunction(middleware)
    served = middleware(RequestFactory().get("/static/app.css"))
    assert served.status_code == 200 and b"".join(served.streaming_content) == b"body { margin: 0 }"
    assert middleware(RequestFactory().get("/api/channels/")).content == b"the view"
