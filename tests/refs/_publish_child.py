"""Child process of the publishing crash tests (``test_refs_publish_crash.py``).

Usage::

    python tests/refs/_publish_child.py REPO STORE PREFIX

Opens the local Icechunk repository at ``REPO`` (authorizing the container ``PREFIX``),
publishes the reference store ``STORE`` into its group ``big`` (replacing it) and commits
on ``main``. Prints ``publishing`` before writing the references, ``committing`` before the
commit and ``committed SNAPSHOT`` after it, with the seconds each step took, then waits
to be killed (the test's kill may come after the commit).
"""

from __future__ import annotations

import sys
import time
import warnings


def main(repo_path: str, store: str, prefix: str) -> None:
    import icechunk

    from dafzarr import refs

    warnings.simplefilter("ignore")
    icechunk.set_logs_filter("error")
    repo = icechunk.Repository.open(
        icechunk.local_filesystem_storage(repo_path), authorize_virtual_chunk_access={prefix: None}
    )
    session = repo.writable_session("main")
    print("publishing", flush=True)
    t0 = time.perf_counter()
    refs.to_icechunk(store, session.store, group="big", overwrite=True)
    t1 = time.perf_counter()
    print(f"committing {t1 - t0:.3f}", flush=True)
    snapshot = session.commit("big")
    print(f"committed {snapshot} {time.perf_counter() - t1:.3f}", flush=True)
    time.sleep(300)  # waits for the test's SIGKILL, even when the commit beat it


if __name__ == "__main__":
    main(*sys.argv[1:4])
