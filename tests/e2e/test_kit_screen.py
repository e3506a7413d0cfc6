"""The TUI screen matcher the e2e scenarios wait on (``kit.dtachs.drawn``): no Claude Code needed."""

from __future__ import annotations

from e2e.kit.dtachs import drawn


def test_a_letter_the_redraw_kept_in_place_still_matches():
    # as captured from a real run: Ink skipped the cells that already held these letters
    assert drawn("Allowed by PermissionRequest hook", "x Allwed by PermissionRequest hok y")
    assert drawn("Made it.", "●Made it.✻")


def test_other_texts_do_not_match():
    assert not drawn("Denied by PermissionRequest hook", "Allwed by PermissionRequest hok")
    assert not drawn("Allowed by PermissionRequest hook", "Allowed by PermissionRequest")
    assert not drawn("Allowed by PermissionRequest hook", "Ald by PermissonRquest hk")
