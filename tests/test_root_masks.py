"""Which program roots reach a function: one pass over components = a search per root.

``RootIndex`` computes, for every function, the roots that reach it through at
least one call (``below``), in one topological pass over the strongly connected
components with the roots as bit sets; it used to search the graph once per root
(vLLM: 34 roots, 11 s per question). The definition is the per-root search:
these tests compare with it on random graphs with cycles, self-calls, roots
inside cycles, several roots on one node and roots that reach nothing.
"""

from __future__ import annotations

import random

import networkx as nx
import pytest

from flagtrace.programs import _closure, _components, _masks_below


def below_by_search(g: nx.DiGraph, seeds: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for root, mask in seeds.items():
        for node in _closure(g, g.successors(root)):
            out[node] = out.get(node, 0) | mask
    return out


def random_graph(seed: int) -> tuple[nx.DiGraph, dict[str, int]]:
    rnd = random.Random(seed)
    n = rnd.randint(1, 40)
    g = nx.DiGraph()
    g.add_nodes_from(f"f{i}" for i in range(n))
    for _ in range(rnd.randint(0, 3 * n)):
        g.add_edge(f"f{rnd.randrange(n)}", f"f{rnd.randrange(n)}")  # self-calls included
    seeds: dict[str, int] = {}
    for bit in range(rnd.randint(0, 8)):
        root = f"f{rnd.randrange(n)}"
        seeds[root] = seeds.get(root, 0) | 1 << bit
    return g, seeds


@pytest.mark.parametrize("seed", range(300))
def test_masks_equal_a_search_per_root(seed: int) -> None:
    g, seeds = random_graph(seed)
    assert _masks_below(g, seeds) == below_by_search(g, seeds)


def test_a_root_is_below_itself_only_on_a_cycle() -> None:
    g = nx.DiGraph([("main", "a"), ("a", "b"), ("b", "a"), ("loop", "loop")])
    masks = _masks_below(g, {"main": 1, "a": 2, "loop": 4})
    assert masks == {"a": 3, "b": 3, "loop": 4}


@pytest.mark.parametrize("seed", range(300))
def test_components_are_networkx_components(seed: int) -> None:
    """Our Tarjan over the nodes the roots reach finds the components networkx finds
    in the graph they induce."""
    g, seeds = random_graph(seed)
    reached = _closure(g, sorted(seeds))
    ours = sorted(sorted(c) for c in _components(g, reached))
    theirs = sorted(sorted(c) for c in nx.strongly_connected_components(g.subgraph(reached)))
    assert ours == theirs
