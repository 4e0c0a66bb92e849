"""What ``run_server`` does to its process before it serves."""

from __future__ import annotations

import gc

from runport.server._serve import settle_heap


def test_what_the_process_holds_before_serving_leaves_the_collectors_walks() -> None:
    # Every full collection walks each tracked object: the serving process's imports, catalog
    # and app are moved out of those walks once, before the first request.
    loaded = [["a container the collector tracks"]]
    assert any(tracked is loaded for tracked in gc.get_objects())
    try:
        settle_heap()
        assert gc.get_freeze_count() > 0
        assert not any(tracked is loaded for tracked in gc.get_objects())
        made_later = [["made after the server started"]]
        assert any(tracked is made_later for tracked in gc.get_objects())
    finally:
        gc.unfreeze()
