"""``.npy`` headers are read one at a time: NumPy parses them with ``ast.literal_eval``, and
CPython 3.11's parser can raise ``SystemError: AST constructor recursion depth mismatch``
when threads parse at once (seen with ``irs criteo --local``'s threads)."""

from __future__ import annotations

import threading

import numpy as np

from interactive_recsys.io import _npy


def test_a_header_read_waits_while_another_thread_reads_one(tmp_path) -> None:
    path = tmp_path / "a.npy"
    np.save(path, np.arange(6).reshape(3, 2))
    done: list[str] = []
    readers = [threading.Thread(target=lambda: done.append(str(_npy.load_npy(path)[2, 1]))),
               threading.Thread(target=lambda: done.append(str(_npy.npy_shape(path)))),
               threading.Thread(target=lambda: done.append(str(_npy.read_npy_rows(path, 1, 2))))]
    with _npy._HEADER_LOCK:  # as if another thread were parsing a header
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(timeout=0.5)
        assert done == [] and all(r.is_alive() for r in readers)
    for reader in readers:
        reader.join(timeout=10)
    assert sorted(done) == sorted(["5", "(3, 2)", "[[2 3]]"])


def test_many_threads_read_the_same_files(tmp_path) -> None:
    paths = []
    for i in range(4):
        paths.append(tmp_path / f"{i}.npy")
        np.save(paths[-1], np.full((2, 50), i, np.int64))
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(200):
                for i, path in enumerate(paths):
                    assert int(_npy.load_npy(path)[1, 49]) == i
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
