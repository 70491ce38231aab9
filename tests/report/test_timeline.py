# SPDX-License-Identifier: Apache-2.0
"""The timeline (HTML) and the Chrome trace JSON of a run: what they hold,
that they hold all of a long run, and that a real headless Chromium opens
the page without errors and draws what the run did."""

from __future__ import annotations

import asyncio
import html
import html.parser
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import hang_guard, run_pytest

import askew
from askew._loop import settings
from askew._report import timeline as _timeline

RECEIVED: list[int] = []


async def _pinger(node: Any, peers: int, rounds: int) -> None:
    """Ping every other node each second; count what arrives."""
    node.emit("up")
    for k in range(rounds):
        for dst in range(peers):
            if dst != node.id:
                await node.send(dst, ("ping", node.id, k))
        while (msg := await node.recv(timeout=1.0)) is not None:
            RECEIVED.append(msg.src)
    while True:  # and read to the end
        RECEIVED.append((await node.recv()).src)


async def _known_run(world: Any) -> None:
    """Three nodes, a partition, a crash and restart, a duplicating link."""
    RECEIVED.clear()
    nodes = [world.spawn(_pinger, 3, 6) for _ in range(3)]
    world.log.emit("started")
    async with world.partition({0}, {1, 2}):
        await world.clock.advance(2)
    world.net.configure(duplicate=0.3)
    world.faults.crash(nodes[2])
    await world.clock.advance(1)
    world.faults.restart(nodes[2])
    await world.clock.advance(10)


async def _long_run(world: Any) -> None:
    """Over 100,000 logged events: far more than the ring's 10,000."""
    world.spawn(_pinger, 1, 1)
    for k in range(100_500):
        world.log.emit(f"tick {k}")
    await world.clock.advance(1)


async def _failing_run(world: Any) -> None:
    world.spawn(_pinger, 2, 3)
    world.spawn(_pinger, 2, 3)
    await world.clock.advance(2)
    raise AssertionError("planted")


def _views(tmp_path: Path, test: Any, seed: int = 7) -> tuple[str, dict[str, Any]]:
    page, trace = tmp_path / "run.html", tmp_path / "run.json"
    askew.Replay.run(test, seed=seed, timeline=str(page), trace_json=str(trace))
    return page.read_text(), json.loads(trace.read_text())


def _page_data(page: str) -> dict[str, Any]:
    blob = re.search(r"<script type='application/json' id=data>(.*?)</script>", page, re.S)
    assert blob is not None
    return json.loads(blob.group(1))  # type: ignore[no-any-return]


def test_the_timeline_pairs_every_delivered_message_with_its_send(tmp_path: Path) -> None:
    page, _trace = _views(tmp_path, _known_run)
    data = _page_data(page)
    delivered = [m for m in data["messages"] if m[5] == "delivered"]
    assert len(delivered) == len(RECEIVED) > 0
    assert sorted(m[2] for m in delivered) == sorted(RECEIVED)
    assert all(m[0] <= m[1] for m in delivered)  # sent before it arrived
    assert data["nodes"] == [0, 1, 2]
    outcomes = {m[5] for m in data["messages"]}
    assert "dropped: partitioned" in outcomes
    kinds = {e[2] for e in data["events"]}
    assert {"crash", "restart", "node", "world", "net", "spawn"} <= kinds
    assert "<script src" not in page and "http" not in page.split("<svg", 1)[0].lower()


def test_a_run_of_100000_events_is_drawn_whole_in_pages(tmp_path: Path) -> None:
    page, trace = _views(tmp_path, _long_run)
    data = _page_data(page)
    ticks = [e for e in data["events"] if e[3].startswith("tick ")]
    assert len(ticks) == 100_500  # the whole run, not the ring's last 10,000
    assert len(data["pages"]) > 1
    assert "shown in" in page and "pages" in page
    assert sum(1 for e in trace["traceEvents"] if e["ph"] == "i") >= 100_500


def test_the_trace_json_follows_the_trace_event_format(tmp_path: Path) -> None:
    _page, trace = _views(tmp_path, _known_run)
    events = trace["traceEvents"]
    assert isinstance(events, list) and events
    flows: dict[int, list[str]] = {}
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
    assert names == {0: "test body", 1: "node 0", 2: "node 1", 3: "node 2"}
    for e in events:
        assert e["ph"] in {"M", "i", "X", "s", "f"}
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert e["pid"] in names
        if e["ph"] == "M":
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        assert isinstance(e["name"], str)
        if e["ph"] == "i":
            assert e["s"] in {"g", "p", "t"}
        if e["ph"] == "X":
            assert e["dur"] > 0
        if e["ph"] in "sf":
            assert e["cat"] == "msg"
            flows.setdefault(e["id"], []).append(e["ph"])
            if e["ph"] == "f":
                assert e["bp"] == "e"
    assert flows and all(v == ["s", "f"] for v in flows.values())
    arrived = [e for e in events if e["ph"] == "X" and e["cat"] == "deliver"]
    assert len(flows) == len(arrived)  # dropped on arrival too: it travelled
    assert sum(1 for e in arrived if e["args"]["outcome"] == "delivered") == len(RECEIVED)
    # Each flow end sits on a delivery slice of its receiving node at its time.
    slices = {(e["pid"], e["ts"]) for e in events if e["ph"] == "X"}
    assert all((e["pid"], e["ts"]) in slices for e in events if e["ph"] in "sf")


def test_a_failing_run_writes_its_views_and_the_report_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASKEW_TIMELINE", str(tmp_path / "views"))
    monkeypatch.setenv("ASKEW_TRACE_JSON", str(tmp_path / "trace.json"))
    with pytest.raises(askew.SimulationFailure) as info:
        askew.simulate(seed=3, iterations=1)(_failing_run)()
    report = info.value.report  # type: ignore[attr-defined]
    page = tmp_path / "views" / "_failing_run-3.html"
    assert f"  timeline: {page}" in report
    assert f"  trace json: {tmp_path / 'trace.json'}" in report
    data = _page_data(page.read_text())
    assert data["failure"] is not None and "planted" in data["failure"][1]


def test_a_failing_replay_follows_the_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASKEW_TIMELINE", str(tmp_path))
    with pytest.raises(askew.SimulationFailure):
        askew.Replay.run(_failing_run, seed=4)
    assert (tmp_path / "_failing_run-4.html").exists()


def test_a_failing_run_without_views_asked_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASKEW_TIMELINE", raising=False)
    monkeypatch.delenv("ASKEW_TRACE_JSON", raising=False)
    with pytest.raises(askew.SimulationFailure) as info:
        askew.simulate(seed=3, iterations=1)(_failing_run)()
    assert "timeline:" not in info.value.report  # type: ignore[attr-defined]


def test_the_pytest_options_write_a_failing_runs_views(tmp_path: Path) -> None:
    source = """
        import askew

        @askew.simulate(seed=5, iterations=1)
        async def test_fails(world):
            assert world.now < 0
    """
    proc = run_pytest(tmp_path, source, "--askew-timeline=views", "--askew-trace-json=t.json")
    page = tmp_path / "views" / "test_mod.py.test_fails-5.html"
    assert f"timeline: {page}" in proc.stdout, proc.stdout
    assert f"trace json: {tmp_path / 't.json'}" in proc.stdout
    assert page.exists()
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]


def test_each_parametrization_and_each_file_of_a_failing_test_keeps_its_own_timeline(
    tmp_path: Path,
) -> None:
    # One name, one seed: three parameters (two that differ only in a
    # character a file name cannot hold), a class's method, another file.
    source = """
        import askew, pytest

        @pytest.mark.parametrize("p", ["a/b", "a b", "plain"])
        @askew.simulate(seed=5, iterations=1)
        async def test_fails(world, p):
            world.log.emit(f"param {p}")
            assert world.now < 0

        class TestGroup:
            @askew.simulate(seed=5, iterations=1)
            async def test_fails(self, world):
                world.log.emit("in the class")
                assert world.now < 0
    """
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "test_other.py").write_text(
        "import askew\n\n@askew.simulate(seed=5, iterations=1)\n"
        "async def test_fails(world):\n    world.log.emit('other file')\n    assert world.now < 0\n"
    )
    proc = run_pytest(tmp_path, source, "--askew-timeline=views", "sub/test_other.py")
    assert proc.returncode == 1, proc.stdout
    pages = sorted((tmp_path / "views").iterdir())
    assert len(pages) == 5, [p.name for p in pages]
    assert tmp_path / "views" / "test_mod.py.test_fails[plain]-5.html" in pages
    assert tmp_path / "views" / "test_mod.py.TestGroup.test_fails-5.html" in pages
    assert tmp_path / "views" / "sub.test_other.py.test_fails-5.html" in pages
    emitted = set()
    for page in pages:
        assert f"timeline: {page}" in proc.stdout  # each report names its own file
        (text,) = [e[3] for e in _page_data(page.read_text())["events"] if e[2] == "world"]
        emitted.add(text)
    assert emitted == {"param a/b", "param a b", "param plain", "in the class", "other file"}


def test_a_timeline_name_never_outgrows_a_file_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASKEW_TIMELINE", str(tmp_path))
    monkeypatch.setenv("PYTEST_CURRENT_TEST", f"t.py::test_x[{'p' * 300}] (call)")
    page, _ = settings.env_views("test_x", 2**64 - 1)
    assert page is not None and len(os.path.basename(page)) < 200
    monkeypatch.setenv("PYTEST_CURRENT_TEST", f"t.py::test_x[{'p' * 299}q] (call)")
    assert settings.env_views("test_x", 2**64 - 1)[0] != page


def test_views_leave_the_trace_of_the_run_unchanged(tmp_path: Path) -> None:
    """The log's size is not part of the run: a timeline's run hashes alike."""
    hashes: list[int] = []

    async def run(world: Any) -> None:
        await _known_run(world)
        hashes.append(world.log.hash)

    askew.Replay.run(run, seed=11)
    askew.Replay.run(run, seed=11, timeline=str(tmp_path / "a.html"))
    assert len(hashes) == 3 and len(set(hashes)) == 1  # the view's run is the third


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _open_in_chromium(page: Path) -> tuple[dict[str, Any], str]:
    """What the page says it drew (its <pre id=summary>) once loaded in
    headless Chromium, and the browser's log (console messages included)."""
    drawn, stderr, _dom = _load_in_chromium(page)
    return drawn, stderr


def _load_in_chromium(page: Path) -> tuple[dict[str, Any], str, str]:
    """_open_in_chromium's two, and the DOM the page's script built."""
    browser = _chromium()
    assert browser is not None
    # The browser is no part of askew: it gets no LD_PRELOAD (under `make
    # asan`, libasan's, in which chromium does not start within the timeout).
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    done = subprocess.run(
        [browser, "--headless=new", "--no-sandbox", "--disable-gpu",
         "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=hang_guard(300), check=True, env=env,
    )  # fmt: skip
    summary = re.search(r'<pre id="summary">(.*?)</pre>', done.stdout, re.S)
    assert summary is not None, done.stdout[-2000:]
    return json.loads(summary.group(1)), done.stderr, done.stdout


@pytest.mark.skipif(
    _chromium() is None, reason="chromium is not installed (`make test-browser` and CI install it)"
)
def test_chromium_opens_the_timeline_and_draws_the_run(tmp_path: Path) -> None:
    page, _trace = _views(tmp_path, _known_run)
    data = _page_data(page)
    delivered = sum(1 for m in data["messages"] if m[5] == "delivered")
    drawn, stderr = _open_in_chromium(tmp_path / "run.html")
    assert drawn["errors"] == []
    assert drawn["lanes"] == 1 + 3  # the test body and one lane per node
    assert drawn["arrows"] == delivered == len(RECEIVED)
    # Every console message (console.error and uncaught exceptions included)
    # reaches stderr as an INFO:CONSOLE line, its level not named: the page
    # logs nothing, so there must be none.
    console = [line for line in stderr.splitlines() if ":CONSOLE" in line]
    assert console == []


def test_the_screenshot_script_runs(tmp_path: Path) -> None:
    if _chromium() is None:
        pytest.skip("chromium is not installed (`make test-browser` and CI install it)")
    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "shot.png"
    subprocess.run(
        [sys.executable, str(root / "scripts" / "timeline_screenshot.py"), str(out)],
        check=True, timeout=hang_guard(300), cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_page_escapes_what_the_run_logged(tmp_path: Path) -> None:
    async def run(world: Any) -> None:
        world.log.emit("</script><b>x")

    page = tmp_path / "p.html"
    askew.Replay.run(run, seed=1, timeline=str(page))
    text = page.read_text()
    assert "</script><b>x" not in text
    assert any("</script><b>x" in e[3] for e in _page_data(text)["events"])
    assert _timeline.PAGE_EVENTS > 0


# Markup that would end the data's script element, open a comment or a
# script in it, end a CDATA section, start an entity, end a JavaScript line
# or a string: in every field the page shows.
HOSTILE = "</script><!--<script>alert(1)</script>]]>&amp;<b>\u2028\u2029'\"`${x}"

HOSTILE_NODES = """
import dataclasses

@dataclasses.dataclass(frozen=True)
class Payload:
    def __repr__(self):
        return HOSTILE

async def hostile_node(node):
    node.emit(HOSTILE)
    await node.send(1 - node.id, Payload())
    await node.recv()

async def hostile_run(world):
    world.log.emit(HOSTILE)
    world.spawn(hostile_node)
    world.spawn(hostile_node)
    await world.clock.advance(1)
    assert False, HOSTILE
"""


class _Parsed(html.parser.HTMLParser):
    """The elements a page parses into, and the text of its scripts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.scripts: list[str] = []
        self.title = ""
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)
        self._in = tag

    def handle_endtag(self, tag: str) -> None:
        self.tags.append("/" + tag)
        self._in = None

    def handle_comment(self, data: str) -> None:
        self.tags.append("<!--")

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts.append(data)
        elif self._in == "title":
            self.title += data


def _hostile_page(tmp_path: Path) -> Path:
    """A failing run whose every shown field holds HOSTILE: the test's name,
    payloads, events, the failure, the await sites' files and functions."""
    folder = tmp_path / "<!--<script>"
    folder.mkdir()
    source = folder / "]]>&amp;<b>.py"
    source.write_text(f"HOSTILE = {HOSTILE!r}\n{HOSTILE_NODES}")
    spec = importlib.util.spec_from_file_location("hostile_nodes", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for fn in (module.hostile_node, module.hostile_run):
        fn.__code__ = fn.__code__.replace(co_qualname=HOSTILE)
    module.hostile_run.__qualname__ = HOSTILE
    page = tmp_path / "hostile.html"
    with pytest.raises(askew.SimulationFailure):
        askew.Replay.run(module.hostile_run, seed=2, timeline=str(page))
    return page


def test_no_payload_changes_how_the_page_parses(tmp_path: Path) -> None:
    page = _hostile_page(tmp_path)
    text = page.read_text()
    innocent = tmp_path / "plain.html"
    askew.Replay.run(_known_run, seed=2, timeline=str(innocent))
    parsed, plain = _Parsed(), _Parsed()
    parsed.feed(text)
    plain.feed(innocent.read_text())
    # The same elements as a page of an innocent run: the hostile text
    # opened, closed and commented out nothing.
    assert parsed.tags == plain.tags and "<!--" not in parsed.tags
    assert parsed.title == f"askew timeline: {HOSTILE} seed=2"
    blob = parsed.scripts[0]
    assert not set(blob) & set("<>&\u2028\u2029")
    data = json.loads(blob)
    # ...and the page's data holds each field exactly as logged.
    assert data["failure"][1] == HOSTILE.splitlines()[0]  # its first line: U+2028 ends it
    assert sum(e[3].endswith(HOSTILE) for e in data["events"]) == 3  # the world's, each node's
    delivered = [m for m in data["messages"] if m[5] == "delivered"]
    assert len(delivered) == 2  # each payload's repr, cut short as the page cuts it
    assert all("<!--<script>" in m[4] and HOSTILE.startswith(m[4][:-3]) for m in delivered)
    sites = [m[6] for m in delivered] + [m[7] for m in delivered]
    sites += [e[4] for e in data["events"] if e[3].endswith(HOSTILE) and e[2] != "assert"]
    assert len(sites) == 7
    assert all("<!--<script>" in s and "]]>&amp;<b>.py:" in s for s in sites)
    assert all(s.endswith(f" in {HOSTILE}") for s in sites)


@pytest.mark.skipif(
    _chromium() is None, reason="chromium is not installed (`make test-browser` and CI install it)"
)
def test_chromium_draws_a_run_of_hostile_text_as_text(tmp_path: Path) -> None:
    page = _hostile_page(tmp_path)
    drawn, stderr, dom = _load_in_chromium(page)
    assert drawn["errors"] == [] and drawn["lanes"] == 3 and drawn["arrows"] == 2
    assert [line for line in stderr.splitlines() if ":CONSOLE" in line] == []
    assert dom.count("<b>") == 1  # the header's own: the hostile ones stayed text
    assert "alert(1)</script>" not in dom


async def _tcp_server(node: Any) -> None:
    import asyncio

    async def handle(reader: Any, writer: Any) -> None:
        writer.write((await reader.readline()).upper())
        writer.close()

    await asyncio.start_server(handle, None, 6379)
    await asyncio.sleep(3600)


async def _tcp_client(node: Any) -> None:
    import asyncio

    reader, writer = await asyncio.open_connection("db", 6379)
    writer.write(b"ping\n")
    node.answer = await reader.readline()


async def _tcp_run(world: Any) -> None:
    world.spawn(_tcp_server, name="db")
    client = world.spawn(_tcp_client)
    await world.clock.advance(5)
    assert client.answer == b"PING\n"


def test_tcp_connections_and_segments_are_on_the_timeline(tmp_path: Path) -> None:
    page, _trace = _views(tmp_path, _tcp_run)
    data = _page_data(page)
    kinds = {e[2] for e in data["events"]}
    assert {"connect", "accept"} <= kinds
    assert any(m[5] == "delivered" for m in data["messages"])  # the segments


@pytest.mark.skipif(
    _chromium() is None, reason="chromium is not installed (`make test-browser` and CI install it)"
)
def test_chromium_opens_the_timeline_of_100000_events(tmp_path: Path) -> None:
    _views(tmp_path, _long_run)
    drawn, _stderr = _open_in_chromium(tmp_path / "run.html")
    assert drawn["errors"] == [] and drawn["pages"] > 1 and drawn["lanes"] == 2


def _line_of(fn: Any, text: str) -> str:
    """`file:line in name` of the first line of fn's source holding text."""
    lines, first = inspect.getsourcelines(fn)
    k = next(k for k, line in enumerate(lines) if text in line)
    path = os.path.relpath(inspect.getfile(fn))
    return f"{path}:{first + k} in {fn.__qualname__}"


def test_each_event_knows_the_user_line_that_made_it(tmp_path: Path) -> None:
    page, trace = _views(tmp_path, _known_run)
    data = _page_data(page)
    send, recv = _line_of(_pinger, "await node.send("), _line_of(_pinger, ":= await node.recv(")
    last_recv = _line_of(_pinger, "(await node.recv()).src")
    delivered = [m for m in data["messages"] if m[5] == "delivered"]
    assert delivered and all(m[6] == send for m in delivered)
    assert {m[7] for m in delivered} <= {recv, last_recv}  # where the receiver awaited it
    assert all(m[6] == send for m in data["messages"])  # dropped ones too
    sites = {e[3]: e[4] for e in data["events"]}
    assert sites["started"] == _line_of(_known_run, 'world.log.emit("started")')
    assert sites["crash 2"] == _line_of(_known_run, "world.faults.crash(")
    assert sites["0 up"] == _line_of(_pinger, 'node.emit("up")')
    flows = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "deliver"]
    assert all(e["args"]["sent by"] == send for e in flows)


def test_only_a_timelines_run_notes_await_sites(tmp_path: Path) -> None:
    """A run without a timeline runs without the receive hook; the
    timeline's run (the last: Replay.run runs its seed, then once more for
    its views) with it, and with no profile hook either way."""
    from askew._world import node as node_module

    hooks: list[Any] = []

    async def run(world: Any) -> None:
        hooks.append((node_module._seen, sys.getprofile()))

    askew.Replay.run(run, seed=3)
    askew.Replay.run(run, seed=3, timeline=str(tmp_path / "t.html"))
    assert len(hooks) == 3 and hooks[:2] == [(None, None), (None, None)]
    assert hooks[2][0] is not None and hooks[2][1] is None
    assert node_module._seen is None  # and it is gone after
    assert node_module.Node.recv is node_module._RECV_PLAIN


def test_a_profiler_already_installed_keeps_running(tmp_path: Path) -> None:
    seen: list[str] = []

    def profiler(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is _pinger.__code__:
            seen.append(event)

    sys.setprofile(profiler)
    try:
        _views(tmp_path, _known_run)
    finally:
        sys.setprofile(None)
    assert seen


@pytest.mark.skipif(
    _chromium() is None, reason="chromium is not installed (`make test-browser` and CI install it)"
)
def test_chromium_shows_the_await_site_on_hover(tmp_path: Path) -> None:
    _views(tmp_path, _known_run)
    drawn, _stderr, dom = _load_in_chromium(tmp_path / "run.html")
    assert drawn["errors"] == []
    # The hover text is each drawn element's <title>, as the browser built it.
    titles = [html.unescape(t) for t in re.findall(r"<title>(.*?)</title>", dom, re.S)]
    started = [t for t in titles if t.endswith("world\nstarted\nat " + _line_of(_known_run,
               'world.log.emit("started")'))]  # fmt: skip
    assert len(started) == 1, titles[:20]
    arrows = [t for t in titles if "\ndelivered\n" in t]
    send, recv = _line_of(_pinger, "await node.send("), _line_of(_pinger, ":= await node.recv(")
    assert arrows and all(f" by {send}\n" in t for t in arrows)
    assert any(t.endswith(f"\nawaited at {recv}") for t in arrows)


# State over time, the legend, the failure's label, the fault index, the
# density strip and hover cards (issue 26).


async def _split_leaders(world: Any) -> None:
    """Two nodes that end believing different leaders: the failure."""

    async def member(node: Any, leader: int) -> None:
        node.leader = None
        await asyncio.sleep(1)
        node.leader = leader
        await asyncio.sleep(1)
        node.term = 2

    a, b = world.spawn(member, 3), world.spawn(member, 4)
    world.faults.crash(world.spawn(member, 9))
    await world.clock.advance(3)
    assert a.leader == b.leader, f"leaders {a.leader} and {b.leader}"


def test_the_timeline_holds_each_nodes_state_over_time(tmp_path: Path) -> None:
    with pytest.raises(askew.SimulationFailure):
        _views(tmp_path, _split_leaders)
    data = _page_data((tmp_path / "run.html").read_text())
    changes = [(node, name, value) for _t, node, name, value in data["states"]]
    assert changes[:2] == [(0, "leader", "None"), (1, "leader", "None")]
    assert (0, "leader", "3") in changes and (1, "leader", "4") in changes
    assert (0, "term", "2") in changes
    times = {(node, value): t for t, node, name, value in data["states"] if name == "leader"}
    assert times[(0, "3")] >= 1e9  # set after the first second of virtual time


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (ci installs it)")
def test_chromium_draws_state_bands_a_legend_and_a_labelled_failure(tmp_path: Path) -> None:
    with pytest.raises(askew.SimulationFailure):
        _views(tmp_path, _split_leaders)
    drawn, _stderr, dom = _load_in_chromium(tmp_path / "run.html")
    assert drawn["errors"] == []
    # None then 3 or 4 for the two members; None for the crashed one.
    assert drawn["bands"] >= 5
    assert drawn["legend"] == 11
    assert drawn["failureLabel"] == 1
    assert "failure: leaders 3 and 4</text>" in html.unescape(dom)
    assert drawn["faults"] == 2  # the crash and the failure, in the index
    titles = [html.unescape(t) for t in re.findall(r"<title>(.*?)</title>", dom, re.S)]
    assert any(t.startswith("node 1: leader = 4\nfrom ") for t in titles)


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (ci installs it)")
def test_the_failures_hover_card_is_in_the_page_for_a_screenshot(tmp_path: Path) -> None:
    with pytest.raises(askew.SimulationFailure):
        _views(tmp_path, _split_leaders)
    page = tmp_path / "run.html"
    browser = _chromium()
    assert browser is not None
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    done = subprocess.run(
        [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--dump-dom",
         page.as_uri() + "#card=failure"],
        capture_output=True, text=True, timeout=300, check=True, env=env,
    )  # fmt: skip
    card = re.search(r'<div id="card" style="([^"]*)">(.*?)</div>', done.stdout, re.S)
    assert card is not None, done.stdout[-2000:]
    assert "display: block" in card.group(1)
    assert "leaders 3 and 4" in html.unescape(card.group(2))
