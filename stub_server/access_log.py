"""The request log (``--access-log clf|json``, off by default), through aiohttp's own facilities:
its ``AccessLogger`` for the Common Log Format, an ``AbstractAccessLogger`` for JSON lines. The
file is created 0600 (it names customers' refs and filters). With the log off no logger is given
to aiohttp at all, so the request path pays nothing for it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any

from aiohttp.abc import AbstractAccessLogger
from aiohttp.web_log import AccessLogger
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse

from stub_server.settings import AccessLogFormat

CLF_FORMAT = '%a - - %t "%r" %s %b'
LOGGER_NAME = "stub_server.access"


class JsonAccessLogger(AbstractAccessLogger):
    def log(self, request: BaseRequest, response: StreamResponse, time_s: float) -> None:
        line: dict[str, str | int | float | None] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "remote": request.remote,
            "method": request.method,
            "path": request.path_qs,
            "version": f"HTTP/{request.version.major}.{request.version.minor}",
            "status": response.status,
            "bytes": response.body_length,
            "duration_ms": round(time_s * 1000, 3),
            "user_agent": request.headers.get("User-Agent"),
        }
        self.logger.info(json.dumps(line, ensure_ascii=False, separators=(",", ":")))

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)


def runner_arguments(fmt: AccessLogFormat | None, path: str | None) -> dict[str, Any]:
    """The ``web.AppRunner`` keyword arguments for the chosen access log."""
    if fmt is None:
        return {"access_log": None}
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    for old in list(logger.handlers):
        logger.removeHandler(old)
        old.close()
    handler: logging.Handler
    if path:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        handler = logging.FileHandler(path, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    if fmt == "json":
        return {"access_log": logger, "access_log_class": JsonAccessLogger}
    return {"access_log": logger, "access_log_class": AccessLogger, "access_log_format": CLF_FORMAT}
