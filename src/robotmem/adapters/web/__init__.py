"""The web UI and REST API: ``create_app()`` builds the Flask app, ``serve()`` runs it under waitress.

Writes (every request that is not GET, HEAD or OPTIONS) must be JSON (``Content-Type:
application/json``) and must not come from another site (``Origin`` and ``Sec-Fetch-Site`` are
checked), so a form post from a foreign page cannot change memories; ``GET /api/search`` counts
accesses, so it is refused cross-site as well. With a token configured (``web_token``, env
``ROBOTMEM_WEB_TOKEN``; required when binding to a non-loopback address) every write must also carry
it in ``X-Robotmem-Token`` or ``Authorization: Bearer``. The ``Host`` header must name this server
(``remote.host_allowed``); JSON bodies nested deeper than 64 levels are refused before parsing; every
error goes through ``remote.remote_error`` (no filesystem paths; 503 only for busy/locked storage).
Responses are strict JSON (``robotmem.formats.strict_json``).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pydantic
from flask import Response, jsonify, request, send_from_directory
from flask.json.provider import DefaultJSONProvider
from flask_openapi3.models.info import Info
from flask_openapi3.openapi import OpenAPI
from werkzeug.exceptions import HTTPException

from robotmem import RobotMemory, ValidationError
from robotmem.adapters.web.api import ErrorResponse, api_bp
from robotmem.adapters.web.remote import (
    MAX_BODY_DEPTH,
    allowed_hosts,
    host_allowed,
    json_depth,
    local_paths,
    remote_error,
)
from robotmem.config import header_value_problem, load_settings, web_allowed_hosts
from robotmem.formats import strict_json

__all__ = ["TOKEN_HEADER", "create_app", "serve"]

log = logging.getLogger("robotmem.web")
STATIC_DIR = Path(__file__).resolve().parent / "static"
TOKEN_HEADER = "X-Robotmem-Token"
# Endpoints that read but also write (recall counts an access): refused cross-site, like writes.
_COUNTING_READS = frozenset({"api.search"})
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_STATUS_CODES = {
    400: "invalid_input",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
}


def _error(code: str, message: str, status: int) -> tuple[Response, int]:
    return jsonify({"error": {"code": code, "message": message}}), status


def _describe(exc: pydantic.ValidationError) -> str:
    """Return the problems of a request as ``field: what is wrong`` clauses, like the core's messages."""
    problems = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"]) or "request body"
        detail = error["msg"]
        if error["type"] == "extra_forbidden":
            detail = "unknown parameter"
        elif error["type"] == "missing":
            detail = "is required"
        problems.append(f"{field}: {detail}")
    return "; ".join(problems)


def _validation_error_response(exc: pydantic.ValidationError) -> Response:
    response, status = _error("invalid_input", _describe(exc), 400)
    response.status_code = status
    return response


def _same_origin() -> bool:
    """Return False when the browser says the request comes from another site."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    parts = urlsplit(origin)
    return f"{parts.scheme}://{parts.netloc}" == request.host_url.rstrip("/")


def _token_given() -> str | None:
    token = request.headers.get(TOKEN_HEADER)
    if token:
        return token
    authorization = request.headers.get("Authorization", "")
    if authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return None


class StrictJSONProvider(DefaultJSONProvider):
    """Flask's JSON, but a non-finite number is written as null (browsers reject NaN and Infinity)."""

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        kwargs.setdefault("default", self.default)
        kwargs.setdefault("ensure_ascii", self.ensure_ascii)
        kwargs.setdefault("sort_keys", self.sort_keys)
        return strict_json.dumps(obj, **kwargs)


def _install_guards(app: OpenAPI, token: str | None, hosts: frozenset[str] | None) -> None:
    @app.before_request
    def guard_host() -> tuple[Response, int] | None:
        if hosts is None or host_allowed(request.headers.get("Host"), hosts):
            return None
        return _error(
            "invalid_host",
            "this server does not answer to that Host name; list it in web_allowed_hosts "
            "(ROBOTMEM_WEB_ALLOWED_HOSTS) if it is yours",
            400,
        )

    @app.before_request
    def guard_body() -> tuple[Response, int] | None:
        if request.mimetype != "application/json":
            return None
        # Also without Content-Length (chunked); get_data stops at MAX_CONTENT_LENGTH with a 413.
        if json_depth(request.get_data(cache=True)) > MAX_BODY_DEPTH:
            return _error("invalid_input", f"request body: nests deeper than {MAX_BODY_DEPTH} levels", 400)
        return None

    @app.before_request
    def guard_writes() -> tuple[Response, int] | None:
        if request.method in _SAFE_METHODS:
            if request.endpoint in _COUNTING_READS and not _same_origin():
                return _error(
                    "forbidden",
                    "cross-site searches are refused (a search counts accesses); "
                    "send the request from the same origin",
                    403,
                )
            return None
        if token is not None:
            given = _token_given()
            if given is None or not hmac.compare_digest(given.encode(), token.encode()):
                return _error(
                    "unauthorized", f"writes need the server's token in the {TOKEN_HEADER} header", 401
                )
        if request.mimetype != "application/json":
            return _error(
                "unsupported_media_type",
                "writes must send a JSON body with Content-Type: application/json",
                415,
            )
        if not _same_origin():
            return _error(
                "forbidden", "cross-site writes are refused; send the request from the same origin", 403
            )
        return None

    @app.after_request
    def secure_headers(response: Response) -> Response:
        response.headers["Content-Security-Policy"] = _CONTENT_SECURITY_POLICY
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Referrer-Policy"] = "no-referrer"
        if request.path.startswith("/api/"):
            response.headers["Cache-Control"] = "no-store"
        return response


def _install_error_handlers(app: OpenAPI, known_paths: list[str]) -> None:
    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Any:
        if exc.response is not None:  # already a full response (the validation callback's)
            return exc.response
        status = exc.code or 500
        return _error(_STATUS_CODES.get(status, "http_error"), exc.description or exc.name, status)

    @app.errorhandler(Exception)
    def any_error(exc: Exception) -> tuple[Response, int]:
        code, message, status = remote_error(exc, known_paths)
        if status >= 500:
            log.error("%s %s failed", request.method, request.path, exc_info=exc)
        return _error(code, message, status)


def _check_token(token: str) -> None:
    """Raise ``ValidationError`` for a token no client could send: one the ``web_token`` setting refuses."""
    problem = header_value_problem(token) if isinstance(token, str) else "it is not text"
    if problem is None and (token != token.strip() or not token.isprintable()):
        problem = "it has surrounding spaces, line breaks or control characters"
    if problem is not None:
        raise ValidationError(f"token: no HTTP client can send this token ({problem})")


def create_app(
    memory: RobotMemory | None = None,
    *,
    db: str | os.PathLike[str] | None = None,
    collection: str | None = None,
    embed_backend: str | None = None,
    token: str | None = None,
    trusted_hosts: Iterable[str] | None = None,
) -> OpenAPI:
    """Return the Flask app serving the page at ``/`` and the REST API at ``/api`` (``api_bp``).

    ``memory`` is the ``RobotMemory`` to serve; without it one is opened on ``db`` with settings from
    the environment. ``token``, when given, is required on every write. ``trusted_hosts`` are the
    ``Host`` names answered besides IP literals (defence against DNS rebinding); default: the
    loopback names and the ``web_allowed_hosts`` setting.
    """
    if token is not None:
        _check_token(token)
    if memory is None:
        memory = RobotMemory(db, collection, embed_backend, settings=load_settings(os.environ))
    app = OpenAPI(
        __name__,
        info=Info(title="robotmem", version="1", description="Experience memory for robots: REST API"),
        doc_ui=False,
        security_schemes={
            "token": {
                "type": "apiKey",
                "in": "header",
                "name": TOKEN_HEADER,
                "description": "Required on writes when the server has a token (ROBOTMEM_WEB_TOKEN).",
            }
        },
        validation_error_status=400,
        validation_error_model=ErrorResponse,
        validation_error_callback=_validation_error_response,
        static_folder=str(STATIC_DIR),
        static_url_path="/static",
    )
    app.config["MAX_CONTENT_LENGTH"] = (
        memory.settings.max_data_bytes + memory.settings.max_metadata_bytes + 65536
    )
    app.json = StrictJSONProvider(app)
    app.json.ensure_ascii = False
    app.json.sort_keys = False
    if trusted_hosts is None:
        trusted_hosts = allowed_hosts("", web_allowed_hosts(memory.settings))
    hosts = frozenset(name.strip("[]").lower() for name in trusted_hosts)
    app.extensions["robotmem"] = memory
    app.register_api(api_bp)

    @app.get("/api/openapi.json", doc_ui=False)
    def openapi_document() -> Response:
        return jsonify(app.api_doc)

    @app.get("/", doc_ui=False)
    def index() -> Response:
        return send_from_directory(STATIC_DIR, "index.html")

    token = token or memory.settings.web_token or None
    app.extensions["robotmem.token_required"] = token is not None
    _install_guards(app, token, hosts)
    _install_error_handlers(app, local_paths(memory))
    return app


def is_loopback(host: str) -> bool:
    """Return True when ``host`` names only this machine (localhost, 127.0.0.0/8, ::1)."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(
    host: str = "127.0.0.1",
    port: int = 7878,
    db: str | os.PathLike[str] | None = None,
    collection: str | None = None,
    embed_backend: str | None = None,
    token: str | None = None,
) -> None:
    """Serve the web UI and REST API with waitress until interrupted.

    ``token`` defaults to the ``web_token`` setting (``ROBOTMEM_WEB_TOKEN``). Raises
    ``ValidationError`` when ``host`` is not a loopback address and no token is set: an open port
    must not accept anonymous writes. The ``Host`` header must be a loopback name, ``host``, a name
    in ``web_allowed_hosts`` or an IP address; connections are limited and timed out
    (``web_connection_limit``, ``web_channel_timeout_s``; see ``adapters/web/server.py``).
    """
    from robotmem.adapters.web.server import build_server, check_port, listening_on  # waitress loads here

    check_port(port)
    if token is not None:
        _check_token(token)
    settings = load_settings(os.environ)
    token = token or settings.web_token or None
    if not is_loopback(host) and token is None:
        raise ValidationError(
            f"--host {host}: serving beyond this machine needs a token for writes; "
            "set ROBOTMEM_WEB_TOKEN or bind to 127.0.0.1"
        )
    memory = RobotMemory(db, collection, embed_backend, settings=settings)
    try:
        app = create_app(memory, token=token, trusted_hosts=allowed_hosts(host, web_allowed_hosts(settings)))
        server = build_server(
            app,
            host=host,
            port=port,
            connection_limit=settings.web_connection_limit,
            channel_timeout_s=settings.web_channel_timeout_s,
        )
        for bound_host, bound_port in listening_on(server):
            shown = f"[{bound_host}]" if ":" in bound_host else bound_host
            print(
                f"robotmem web UI on http://{shown}:{bound_port}/ (database {memory.location})",
                file=sys.stderr,
            )
        server.run()
    finally:
        memory.close()
