"""torch.utils._pytree: nested tuples, lists, dicts and namedtuples flattened into their leaves and built again
(what torch.func's transforms walk); a TreeSpec prints as PyTorch's. Anything else, None included, is a leaf."""
from __future__ import annotations

from collections import OrderedDict

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_map", "treespec_pprint"]


class namedtuple:
    """The node type PyTorch names every namedtuple by (its class is the node's context)."""


class TreeSpec:
    """A node: its type, context (a dict's keys, a namedtuple's class) and children's specs."""

    def __init__(self, type, context, children):
        self.type, self.context, self.children = type, context, list(children)

    @property
    def num_leaves(self):
        return sum(c.num_leaves for c in self.children)

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and not isinstance(other, LeafSpec) and self.type is other.type
                and self.context == other.context and self.children == other.children)

    def __repr__(self, indent=0):
        inner = indent + 2
        children = (",\n" + " " * inner).join(c.__repr__(inner) for c in self.children)
        return f"TreeSpec({self.type.__name__}, {self.context}, [{children}])"


class LeafSpec(TreeSpec):
    """A leaf: printed as *."""

    def __init__(self):
        super().__init__(object, None, [])

    @property
    def num_leaves(self):
        return 1

    def __eq__(self, other):
        return isinstance(other, LeafSpec)

    def __repr__(self, indent=0):
        return "*"


_LEAF = LeafSpec()


def _node(tree):
    """(node type, context, children) of a container, or None for a leaf."""
    if isinstance(tree, tuple) and hasattr(type(tree), "_fields"):
        return namedtuple, type(tree), list(tree)
    if type(tree) in (tuple, list):
        return type(tree), None, list(tree)
    if type(tree) in (dict, OrderedDict):
        return type(tree), list(tree), list(tree.values())
    return None


def _build(kind, context, children):
    if kind is namedtuple:
        return context(*children)
    if kind in (dict, OrderedDict):
        return kind(zip(context, children))
    return kind(children)


def tree_flatten(tree):
    """(the leaves left to right, the TreeSpec that tree_unflatten builds them back with)."""
    node = _node(tree)
    if node is None:
        return [tree], _LEAF
    kind, context, children = node
    leaves, specs = [], []
    for child in children:
        child_leaves, spec = tree_flatten(child)
        leaves += child_leaves
        specs.append(spec)
    return leaves, TreeSpec(kind, context, specs)


def tree_unflatten(leaves, spec):
    """The tree of `spec` with `leaves` in its places."""
    leaves = iter(leaves)

    def build(spec):
        if isinstance(spec, LeafSpec):
            return next(leaves)
        return _build(spec.type, spec.context, [build(c) for c in spec.children])
    return build(spec)


def tree_leaves(tree):
    """The leaves, left to right."""
    return tree_flatten(tree)[0]


def tree_map(fn, tree):
    """The tree with fn applied to each leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def treespec_pprint(spec):
    """The spec as its tree would print with * for each leaf (PyTorch's words in its errors)."""
    class Star:
        def __repr__(self):
            return "*"
    return repr(tree_unflatten([Star()] * spec.num_leaves, spec))


def broadcast_to_and_flatten(prefix, spec):
    """One value per leaf of `spec`: `prefix` is a tree whose leaves stand for whole subtrees of spec's tree
    (torch.func's in_dims and out_dims); None where prefix does not fit the tree."""
    out = []

    def walk(prefix, spec):
        node = _node(prefix)
        if node is None:
            out.extend([prefix] * spec.num_leaves)
            return True
        kind, context, children = node
        if isinstance(spec, LeafSpec) or kind is not spec.type or len(children) != len(spec.children):
            return False
        if kind in (dict, OrderedDict):
            if set(context) != set(spec.context):
                return False
            children = [prefix[k] for k in spec.context]
        return all(walk(c, s) for c, s in zip(children, spec.children))
    return out if walk(prefix, spec) else None
