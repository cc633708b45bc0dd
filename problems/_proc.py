"""The benchmark harnesses' child processes: how one is stopped, what it used."""

from __future__ import annotations

import multiprocessing as mp
import resource


def stop_child(proc: mp.Process, grace: float = 5.0) -> None:
    """End ``proc`` past its time: SIGTERM first, so that a backend running an external
    program (CSDP's ``csdp``) stops it and removes its temporary folder on the way out,
    then SIGKILL if ``proc`` has not ended within ``grace`` seconds."""
    proc.terminate()
    proc.join(grace)
    if proc.is_alive():
        proc.kill()
    proc.join()


def usage() -> dict:
    """CPU seconds and peak resident MB of this process together with the children it
    has waited for (an external solver such as ``csdp`` does the whole solve in one)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"cpu_s": own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime,
            "peak_mb": max(own.ru_maxrss, kids.ru_maxrss) / 1024}
