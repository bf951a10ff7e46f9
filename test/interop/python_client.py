#!/usr/bin/env python3
"""Interop probe: the official Python MCP SDK (PyPI `mcp`, 2.3.0) as a client of a Streamable HTTP endpoint.

Usage: python3 test/interop/python_client.py URL [--mode auto|legacy|2026-07-28] [--message TEXT]
                                              [--resource URI] [--prompt NAME] [--timeout SECONDS] [--traceback]
                                              [--bearer-env NAME]

It connects, lists tools, calls `echo` {message}, lists and reads a resource, lists and gets a prompt,
then prints ONE JSON line on stdout with what it saw, including every HTTP exchange the SDK made (method,
JSON-RPC method, status, content type, the MCP-Protocol-Version it sent, whether a session id came back).
Any failure exits non-zero with the error on stderr (and nothing on stdout).

Modes are those of `mcp.Client(mode=...)` in SDK 2.x:
  auto        the SDK default: probe `server/discover` at 2026-07-28 and fall back to the `initialize`
              handshake when the server is not positively modern (mcp/client/_probe.py).
  legacy      force the `initialize` handshake (2025-11-25 era, session via MCP-Session-Id).
  2026-07-28  pin the modern stateless protocol: no handshake, every request carries its own
              `_meta` envelope and MCP-Protocol-Version header.

Everything runs under one overall deadline (--timeout) plus a per-request read timeout, so the script
cannot hang on a silent server.
"""

from __future__ import annotations

import argparse
import os
import json
import sys
import traceback
from importlib import metadata
from typing import Any

try:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError
except ImportError as exc:  # pragma: no cover - exercised by the test's "module missing" message
    sys.stderr.write(
        f"python_client: cannot import the Python MCP SDK ({exc}); install it with "
        "`python3 -m pip install mcp==2.3.0` (.ci/run does this)\n"
    )
    sys.exit(3)

MODES = ("auto", "legacy", "2026-07-28")


def _text_of(content: Any) -> str | None:
    """The text of a text content block (or a resource's text contents), else None."""
    return getattr(content, "text", None)


class HttpTrace:
    """Records each HTTP exchange the SDK makes, via httpx2 event hooks."""

    def __init__(self) -> None:
        self.exchanges: list[dict[str, Any]] = []

    async def on_request(self, request: httpx2.Request) -> None:
        rpc: str | None = None
        if request.method == "POST":
            try:
                body = json.loads(request.content or b"null")
                if isinstance(body, dict):
                    rpc = body.get("method") or ("<response>" if "result" in body or "error" in body else None)
            except (ValueError, httpx2.RequestNotRead):
                rpc = None
        request.extensions["gatehouse_trace"] = {
            "http": request.method,
            "rpc": rpc,
            "sentProtocolVersion": request.headers.get("mcp-protocol-version"),
            "sentSessionId": "mcp-session-id" in request.headers,
        }

    async def on_response(self, response: httpx2.Response) -> None:
        entry = dict(response.request.extensions.get("gatehouse_trace") or {"http": response.request.method})
        entry["status"] = response.status_code
        entry["contentType"] = (response.headers.get("content-type") or "").split(";")[0] or None
        entry["gotSessionId"] = "mcp-session-id" in response.headers
        self.exchanges.append(entry)


async def probe(args: argparse.Namespace) -> dict[str, Any]:
    trace = HttpTrace()
    # A bearer credential, read from the environment so it never shows in a process list.
    headers = {}
    if args.bearer_env:
        headers["Authorization"] = f"Bearer {os.environ[args.bearer_env]}"
    http = httpx2.AsyncClient(
        timeout=httpx2.Timeout(args.timeout, read=args.timeout),
        headers=headers,
        event_hooks={"request": [trace.on_request], "response": [trace.on_response]},
    )
    out: dict[str, Any] = {
        "ok": False,
        "sdk": f"mcp {metadata.version('mcp')}",
        "mode": args.mode,
        "url": args.url,
    }
    async with http:
        transport = streamable_http_client(args.url, http_client=http)
        client = Client(transport, mode=args.mode, read_timeout_seconds=args.timeout, cache=None)
        async with client:
            out["protocolVersion"] = client.protocol_version
            out["era"] = "legacy" if client.session.initialize_result is not None else "modern"
            info = client.server_info
            out["serverInfo"] = {"name": info.name, "version": info.version} if info is not None else None
            caps = client.server_capabilities
            out["serverCapabilities"] = sorted(
                k for k, v in caps.model_dump(by_alias=True, exclude_none=True).items() if v is not None
            )

            tools = await client.list_tools()
            out["tools"] = [t.name for t in tools.tools]

            echoed = await client.call_tool("echo", {"message": args.message})
            out["echo"] = {
                "isError": bool(echoed.is_error),
                "text": next((t for t in map(_text_of, echoed.content) if t is not None), None),
            }

            resources = await client.list_resources()
            out["resources"] = [str(r.uri) for r in resources.resources]
            templates = await client.list_resource_templates()
            out["resourceTemplates"] = [t.uri_template for t in templates.resource_templates]
            read = await client.read_resource(args.resource)
            first = read.contents[0] if read.contents else None
            out["resource"] = {
                "uri": str(first.uri) if first is not None else None,
                "mimeType": getattr(first, "mime_type", None),
                "text": _text_of(first),
            }

            prompts = await client.list_prompts()
            out["prompts"] = [p.name for p in prompts.prompts]
            prompt = await client.get_prompt(args.prompt)
            out["prompt"] = {
                "name": args.prompt,
                "messages": [
                    {"role": m.role, "text": _text_of(m.content)} for m in prompt.messages
                ],
            }
    out["http"] = trace.exchanges
    out["ok"] = True
    return out


def _describe(exc: BaseException) -> list[str]:
    """Flatten exception groups (anyio task groups raise them) into readable lines."""
    if isinstance(exc, BaseExceptionGroup):
        lines: list[str] = []
        for inner in exc.exceptions:
            lines.extend(_describe(inner))
        return lines
    if isinstance(exc, MCPError):
        return [f"MCPError {exc.code}: {exc.message}" + (f" data={json.dumps(exc.data, default=str)}" if exc.data is not None else "")]
    return [f"{type(exc).__name__}: {exc}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("--mode", choices=MODES, default="auto")
    parser.add_argument("--message", default="hello from the python sdk")
    parser.add_argument("--resource", default="demo://resource/dynamic/text/1")
    parser.add_argument("--prompt", default="simple-prompt")
    parser.add_argument("--timeout", type=float, default=20.0, help="overall deadline and per-request read timeout (s)")
    parser.add_argument("--traceback", action="store_true", help="also print the full traceback on failure")
    parser.add_argument("--bearer-env", default=None, help="send Authorization: Bearer <value of this environment variable>")
    args = parser.parse_args()

    async def bounded() -> dict[str, Any]:
        with anyio.fail_after(args.timeout):
            return await probe(args)

    try:
        result = anyio.run(bounded)
    except BaseException as exc:  # noqa: BLE001 - report everything, exit non-zero
        if isinstance(exc, KeyboardInterrupt):
            raise
        for line in _describe(exc):
            sys.stderr.write(f"python_client: error ({args.mode}): {line}\n")
        if isinstance(exc, TimeoutError):
            sys.stderr.write(f"python_client: gave up after {args.timeout}s\n")
        if args.traceback:
            traceback.print_exception(exc, file=sys.stderr)
        return 1
    sys.stdout.write(json.dumps(result, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
