"""The screen watcher's attach (``daemon.screenwatch``) against a dtach master of our own
that behaves as Claude Code 2.1.328 was measured to: it looks at its terminal's size only
a while after the resize signal, redraws whole (``ESC [2J`` first) when the size it finds
differs from the one it drew for, and draws nothing otherwise.  A program slow to look
(a loaded machine) must still be made to draw itself whole."""

from __future__ import annotations

import asyncio
import os
import struct
import tempfile

from aipager.daemon.screenwatch import ScreenWatch

ROWS, COLS = 10, 40


class SlowProgram:
    """A dtach socket with a program behind it that reads its size ``late`` seconds after
    a resize and, if it changed, redraws: erase, then ``text`` on the first row."""

    def __init__(self, late: float, text: str = "whole", split: bool = False) -> None:
        self.late = late
        self.text = text
        #: the erase's first bytes in one write, the rest a moment later
        self.split = split
        self.size = (ROWS, COLS)  # the pty's: what the last window-size packet set
        self.drawn_for = (ROWS, COLS)
        self.redraws = 0
        self._folder = tempfile.mkdtemp()
        self.socket = os.path.join(self._folder, "s")
        self._writers: list[asyncio.StreamWriter] = []

    async def serve(self) -> asyncio.AbstractServer:
        return await asyncio.start_unix_server(self._client, self.socket)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        try:
            while True:
                packet = await reader.readexactly(10)
                kind = packet[0]
                if kind == 3:  # a window size: the pty takes it now, the program looks later
                    rows, cols = struct.unpack("HHHH", packet[2:])[:2]
                    self.size = (rows, cols)
                    asyncio.get_running_loop().call_later(self.late, self._look)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass

    def _look(self) -> None:
        if self.size == self.drawn_for:
            return  # a size that came back before it looked: nothing drawn
        self.drawn_for = self.size
        self.redraws += 1
        drawing = b"\x1b[2J\x1b[H" + self.text.encode()
        for writer in self._writers:
            if self.split:
                writer.write(drawing[:3])
                asyncio.get_running_loop().call_later(0.15, writer.write, drawing[3:])
            else:
                writer.write(drawing)


def _watch(program: SlowProgram, redraw_most: float = 3.0) -> ScreenWatch:
    return ScreenWatch(program.socket, tty_of=lambda _sock: "/dev/pts/fake",
                       size_of=lambda _tty: program.size, redraw_most=redraw_most)


async def _attached(program: SlowProgram) -> list[str]:
    """The watcher's screen once the program drew itself whole at its own size again (or
    after three seconds)."""
    server = await program.serve()
    watch = _watch(program)
    try:
        await watch.start()
        for _ in range(30):
            if watch.rows()[0].startswith("whole") and program.drawn_for == (ROWS, COLS):
                break
            await watch.changed(0.1)
        return watch.rows()
    finally:
        await watch.close()
        server.close()


def test_a_program_slow_to_look_at_its_size_still_draws_itself_whole_for_the_watcher():
    program = SlowProgram(late=0.4)
    rows = asyncio.run(_attached(program))
    # drawn for the narrower size, then for its own again: the watcher's screen is whole
    assert rows[0].startswith("whole"), rows
    assert program.redraws == 2 and program.drawn_for == (ROWS, COLS)


def test_a_program_that_never_redraws_gets_its_size_back_all_the_same():
    async def run() -> tuple[int, int]:
        program = SlowProgram(late=3600.0)  # never looks while the test runs
        server = await program.serve()
        watch = _watch(program, redraw_most=0.3)
        try:
            await watch.start()
            for _ in range(50):  # the packet is on its way to the program
                if program.size == (ROWS, COLS):
                    break
                await asyncio.sleep(0.02)
            return program.size
        finally:
            await watch.close()
            server.close()

    assert asyncio.run(run()) == (ROWS, COLS)


def test_an_erase_split_across_two_reads_is_still_seen_as_a_redraw():
    program = SlowProgram(late=0.2, split=True)
    assert asyncio.run(_attached(program))[0].startswith("whole")
    assert program.redraws == 2
