"""The computation DAG of one attention head, one node per scalar value.

Granularity (the optimum depends on it, so it is fixed here and stated in
``docs/pebbling.md``): exact-arithmetic attention O = diag(ℓ)⁻¹·exp(QKᵀ)·V, with every
sum a *chain* of two- or three-operand steps in index order, never one wide node.

======================  ===========================================  ==============
node                    value                                        predecessors
======================  ===========================================  ==============
``q[i,k]``              Q_ik (input)                                 —
``k[j,k]``              K_jk (input)                                 —
``v[j,c]``              V_jc (input)                                 —
``t[i,j,k]``, k < d−1   q_i0·k_j0 + … + q_ik·k_jk (partial dot)      t[i,j,k−1], q[i,k], k[j,k]
``s[i,j]``              S_ij = t[i,j,d−1], the full dot product      t[i,j,d−2], q[i,d−1], k[j,d−1]
``e[i,j]``              P̃_ij = exp(S_ij)                             s[i,j]
``l[i,j]``, 1 ≤ j < N   e_i0 + … + e_ij (partial row sum)            l[i,j−1] (or e[i,0]), e[i,j]
``u[i,c,j]``            Σ_{j' ≤ j} e_ij'·v_j'c (partial PV)          u[i,c,j−1], e[i,j], v[j,c]
``o[i,c]``              O_ic = u[i,c,N−1] / ℓ_i (output)             u[i,c,N−1], ℓ_i
======================  ===========================================  ==============

ℓ_i is ``l[i,N−1]`` (``e[i,0]`` when N = 1). The first link of a chain has one operand
fewer (``t[i,j,0]`` = q·k, ``u[i,c,0]`` = e·v; for d = 1 ``s[i,j]`` is that first link).
Every multiply-add is one node with three predecessors (a fused multiply-add), so any
pebbling needs at least 4 red pebbles once d ≥ 2 or N ≥ 2 (:func:`min_red_pebbles`).

There is no row maximum m_i: exp(S − m) and its e^{m−m_new} rescalings cancel exactly
in exact arithmetic, and this DAG is the one standard attention, FA1 and FA2 all compute
when they do. (Standard attention stores P̃ = exp(S) and ℓ rather than the normalised P;
that is the same count of N² elements plus N.)

>>> dag = attention_dag(2, 1)
>>> len(dag), dag.inputs[:2], dag.outputs
(22, ('q[0,0]', 'q[1,0]'), ('o[0,0]', 'o[1,0]'))
>>> dag.preds("o[1,0]")
('u[1,0,1]', 'l[1,1]')
"""

from __future__ import annotations

from dataclasses import dataclass, field

import itertools

import networkx as nx

from ...errors import require_positive_int


def q(i, k):
    return f"q[{i},{k}]"


def key(j, k):
    return f"k[{j},{k}]"


def v(j, c):
    return f"v[{j},{c}]"


def e(i, j):
    return f"e[{i},{j}]"


def o(i, c):
    return f"o[{i},{c}]"


def score(i, j):
    """S_ij, the full dot product q_i·k_j (the last link of its chain, :func:`dot`)."""
    return f"s[{i},{j}]"


def dot(i, j, k, d):
    """The k-th link of the chain for S_ij (the last link is :func:`score`, ``s[i,j]``)."""
    return score(i, j) if k == d - 1 else f"t[{i},{j},{k}]"


def rowsum(i, j):
    """The partial row sum e_i0 + … + e_ij (j = 0: e_i0 itself, no node of its own)."""
    return e(i, 0) if j == 0 else f"l[{i},{j}]"


def pv(i, c, j):
    """The partial sum Σ_{j' ≤ j} e_ij'·v_j'c."""
    return f"u[{i},{c},{j}]"


@dataclass(frozen=True)
class AttentionDag:
    """The DAG of :func:`attention_dag`: a networkx graph plus the index the game uses.

    ``order`` is a topological order; ``index[name]`` a node's position in it (the bit
    that stands for it in the search's bitmasks).
    """

    seq_len: int
    head_dim: int
    graph: nx.DiGraph = field(repr=False, compare=False)
    order: tuple[str, ...] = field(repr=False)
    inputs: tuple[str, ...] = field(repr=False)
    outputs: tuple[str, ...] = field(repr=False)

    def __len__(self) -> int:
        return len(self.order)

    @property
    def index(self) -> dict[str, int]:
        return {name: n for n, name in enumerate(self.order)}

    def preds(self, node: str) -> tuple[str, ...]:
        """Operands of ``node`` in operand order (empty for an input)."""
        return tuple(self.graph.nodes[node]["operands"])

    def is_input(self, node: str) -> bool:
        return self.graph.nodes[node]["kind"] == "input"

    @property
    def num_edges(self) -> int:
        return self.graph.number_of_edges()

    def row_permutations(self) -> list[tuple[int, ...]]:
        """Every renumbering of the query rows, as maps of node positions (identity first).

        Permuting the rows i of Q (and with them S, P̃, ℓ, the partial sums and O) maps the
        DAG onto itself, inputs to inputs and outputs to outputs, so two game states that
        differ by such a renumbering have the same minimum IO. The search uses this.
        """
        index = self.index
        perms = []
        for image in itertools.permutations(range(self.seq_len)):
            perms.append(tuple(index[_rename_row(name, image)] for name in self.order))
        return perms


def dag_nodes(seq_len: int, head_dim: int) -> int:
    """How many nodes :func:`attention_dag` builds, without building it: Q, K, V's 3·N·d inputs; per (i, j) d dot
    products, an exp and d PV sums, and past j = 0 a row sum; per i, d outputs."""
    N, d = seq_len, head_dim
    return 3 * N * d + N * N * (2 * d + 1) + N * (N - 1) + N * d


def attention_dag(seq_len: int, head_dim: int) -> AttentionDag:
    """Build the element-level DAG of one head with N = ``seq_len``, d = ``head_dim``."""
    require_positive_int("seq_len", seq_len)
    require_positive_int("head_dim", head_dim)
    N, d = seq_len, head_dim
    g = nx.DiGraph()

    def add(name, kind, operands=()):
        g.add_node(name, kind=kind, operands=tuple(operands))
        for p in operands:
            g.add_edge(p, name)

    for i in range(N):
        for k in range(d):
            add(q(i, k), "input")
    for j in range(N):
        for k in range(d):
            add(key(j, k), "input")
        for c in range(d):
            add(v(j, c), "input")
    for i in range(N):
        for j in range(N):
            for k in range(d):
                prev = (dot(i, j, k - 1, d),) if k else ()
                add(dot(i, j, k, d), "dot", prev + (q(i, k), key(j, k)))
            add(e(i, j), "exp", (score(i, j),))
            if j:
                add(rowsum(i, j), "rowsum", (rowsum(i, j - 1), e(i, j)))
            for c in range(d):
                prev = (pv(i, c, j - 1),) if j else ()
                add(pv(i, c, j), "pv", prev + (e(i, j), v(j, c)))
        for c in range(d):
            add(o(i, c), "output", (pv(i, c, N - 1), rowsum(i, N - 1)))
    # Every node was added after its operands (add() is only given operands already in g,
    # so add_edge never creates a node early): the creation order is topological.
    order = tuple(g)
    inputs = tuple(n for n in order if g.nodes[n]["kind"] == "input")
    outputs = tuple(n for n in order if g.nodes[n]["kind"] == "output")
    return AttentionDag(N, d, g, order, inputs, outputs)


def _rename_row(name: str, image) -> str:
    """``name`` with its query row i replaced by ``image[i]`` (K and V have no query row)."""
    letter, rest = name.split("[", 1)
    if letter in ("k", "v"):
        return name
    first, tail = rest.split(",", 1)
    return f"{letter}[{image[int(first)]},{tail}"


def min_red_pebbles(dag: AttentionDag) -> int:
    """The fewest red pebbles with which any pebbling exists: max in-degree + 1.

    Enough, because with unlimited blue pebbles every node can be computed in topological
    order (load its operands, compute, store, delete); necessary, because computing a node
    needs its operands and itself red at once.
    """
    return max((len(dag.preds(n)) + 1 for n in dag.order if not dag.is_input(n)), default=1)


__all__ = ["AttentionDag", "attention_dag", "dag_nodes", "min_red_pebbles"]
