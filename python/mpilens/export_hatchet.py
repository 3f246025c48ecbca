"""A run for Hatchet and Thicket: now mpilens.exports.hatchet; its names stay importable from here."""

from __future__ import annotations

from .exports.hatchet import (
                              EXC_METRICS,
                              INC_METRICS,
                              ROOT_NAME,
                              TreeNode,
                              build_tree,
                              to_dict,
                              to_hatchet,
                              to_literal,
                              to_thicket,
                              write,
)

__all__ = ["EXC_METRICS", "INC_METRICS", "ROOT_NAME", "TreeNode", "build_tree", "to_dict", "to_hatchet", "to_literal",
           "to_thicket", "write"]
