"""The one pagination of every list the API returns.

Limit/offset, whose envelope is `{count, next, previous, results}`: `count`
is the whole list's length, so a client can ask for any stretch directly
(e.g. the newest messages of a path: `offset=count-limit`), and `next` /
`previous` are ready-made URLs (null at the ends).
"""

from rest_framework.pagination import LimitOffsetPagination


class Pagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 500
