"""The class model: MRO, attribute lookup on classes, and the analysed
subclasses of library classes (for class-hierarchy dispatch)."""

from __future__ import annotations

from collections import defaultdict

from flagtrace.model import DecoratorKind, ScopeKind
from flagtrace.resolve.state import ResolverBase
from flagtrace.resolve.values import BUILTIN, CLASS, EMPTY, EXTERNAL, FUNCTION, Values, ordered


class ClassModel(ResolverBase):
    def mro(self, cls: str) -> tuple[str, ...]:
        """C3 linearisation over analysed classes; external bases are noted aside
        (``run_memo.external_bases``). Bases are definitions: memoised for the run."""
        memo = self.run_memo.mro.get(cls)
        if memo is not None:
            return memo
        self.run_memo.mro[cls] = (cls,)  # guards cycles
        scope = self.p.scopes.get(cls)
        bases: list[str] = []
        external: list[str] = []
        if scope is not None and scope.parent is not None:
            for base in scope.bases:
                named = [(kind, name) for kind, name, _ in ordered(self.eval(scope.parent, base))]
                classes = [name for kind, name in named if kind is CLASS and name != cls]
                if len(classes) > 1:  # ``class L(linear_cls)`` with a choice of classes
                    self.run_memo.alternative_bases[cls] = tuple(classes)
                for kind, name in named:
                    if kind is CLASS and name != cls:
                        bases.append(name)
                    elif kind is EXTERNAL:
                        external.append(name)
        seqs = [list(self.mro(b)) for b in bases] + [list(bases)]
        result = (cls, *c3_merge(seqs))
        for b in bases:
            external.extend(self.run_memo.external_bases.get(b, ()))
        self.run_memo.mro[cls] = result
        self.run_memo.external_bases[cls] = tuple(dict.fromkeys(external))
        return result

    def alternative_bases(self, cls: str) -> tuple[str, ...]:
        """The classes one base expression of ``cls`` may name, when it may name
        several (``class HFLinear(linear_cls)`` with ``linear_cls`` chosen from a
        dict): ``super()`` reaches each of them, not only the first in the MRO."""
        self.mro(cls)
        return self.run_memo.alternative_bases.get(cls, ())

    def external_bases_of(self, cls: str) -> tuple[str, ...]:
        self.mro(cls)
        return self.run_memo.external_bases.get(cls, ())

    def class_attribute(self, cls: str, attr: str) -> Values:
        """``cls.attr`` through the MRO: the first class that binds it."""
        key = (cls, attr)
        found = self.memo.class_attributes.get(key)
        if found is not None:
            self.memo.note(("class attribute", *key), found)
            return found

        def compute() -> Values:
            for owner in self.mro(cls):
                members = self.own_member(owner, attr)
                if members:
                    return members
            return EMPTY

        return self.memo.solve(
            self.memo.class_attributes, key, ("class attribute", *key), compute, EMPTY
        )

    def own_member(self, cls: str, attr: str) -> Values:
        scope = self.p.scopes.get(cls)
        if scope is None or attr not in self.p.locals[cls]:
            return EMPTY
        return self.variable(cls, attr)

    def external_dispatch(self, dotted: str, attr: str) -> list[tuple[str, str]]:
        """(method, subclass) for our subclasses of library class ``dotted`` that
        define ``attr``; memoised per round (thousands of ``nn.Module`` subclasses
        were scanned again for every call on a module-typed receiver)."""
        key = (dotted, attr)
        found = self.memo.external_dispatch.get(key)
        if found is not None:
            self.memo.note(("external dispatch", *key), found)
            return found
        return self.memo.solve(
            self.memo.external_dispatch,
            key,
            ("external dispatch", *key),
            lambda: [
                (name, sub)
                for sub in self.subclasses_of_external(dotted)
                for kind, name, _ in ordered(self.own_member(sub, attr))
                if kind is FUNCTION
            ],
            [],
        )

    def subclasses_of_external(self, dotted: str) -> list[str]:
        """Analysed classes with the library class ``dotted`` among their bases."""
        index = self.run_memo.external_subclasses
        if index is None:
            index = defaultdict(list)
            for qn, scope in self.p.scopes.items():
                if scope.kind is ScopeKind.CLASS:
                    self.mro(qn)
                    for ext in self.run_memo.external_bases.get(qn, ()):
                        index[ext].append(qn)
            self.run_memo.external_subclasses = index
        return index.get(dotted, [])

    def subclasses(self, cls: str) -> tuple[str, ...]:
        """The analysed classes that have ``cls`` in their MRO (not ``cls`` itself),
        sorted: what ``cls(...)`` in a classmethod of ``cls`` may build
        (``Approximation.CLASSMETHOD_FACTORY``). Bases are definitions: the
        index is built once for the run."""
        index = self.run_memo.subclasses
        if index is None:
            found: dict[str, list[str]] = defaultdict(list)
            for qn, scope in self.p.scopes.items():
                if scope.kind is ScopeKind.CLASS:
                    for ancestor in self.mro(qn)[1:]:
                        found[ancestor].append(qn)
            index = {k: tuple(sorted(set(v))) for k, v in found.items()}
            self.run_memo.subclasses = index
        return index.get(cls, ())

    def is_classmethod(self, qn: str) -> bool:
        return DecoratorKind.CLASSMETHOD in self.decorator_kinds(qn)

    def is_staticmethod(self, qn: str) -> bool:
        return DecoratorKind.STATICMETHOD in self.decorator_kinds(qn)

    def decorator_kinds(self, qn: str) -> frozenset[DecoratorKind]:
        """What ``qn``'s decorators make of it, recognised by what each decorator
        expression resolves to; one that resolves to nothing (no import in
        sight) by its text. Decorators name imports and builtins: memoised for
        the run."""
        memo = self.run_memo.decorators.get(qn)
        if memo is None:
            memo = self.run_memo.decorators[qn] = self._decorator_kinds(qn)
        return memo

    def _decorator_kinds(self, qn: str) -> frozenset[DecoratorKind]:
        scope = self.p.scopes.get(qn)
        if scope is None or scope.parent is None or not scope.decorators:
            return frozenset()
        kinds: set[DecoratorKind] = set()
        for expr, text in zip(scope.decorators, scope.decorator_texts, strict=True):
            values = self.eval(scope.parent, expr)
            if not values:
                kinds |= decorator_kinds_by_text(text)
            for kind, name, _ in values:
                if kind is BUILTIN and name in _BUILTIN_DECORATORS:
                    kinds.add(_BUILTIN_DECORATORS[name])
                elif kind is EXTERNAL and name.rpartition(".")[2] in _LIBRARY_DECORATORS:
                    kinds.update(_LIBRARY_DECORATORS[name.rpartition(".")[2]])
        return frozenset(kinds)


_BUILTIN_DECORATORS = {
    "staticmethod": DecoratorKind.STATICMETHOD,
    "classmethod": DecoratorKind.CLASSMETHOD,
    "property": DecoratorKind.PROPERTY,
}
_LIBRARY_DECORATORS = {
    "contextmanager": (DecoratorKind.CONTEXTMANAGER,),
    # an async context manager is a context manager for the ``with`` that enters it
    "asynccontextmanager": (DecoratorKind.CONTEXTMANAGER, DecoratorKind.ASYNCCONTEXTMANAGER),
}


def decorator_kinds_by_text(text: str) -> frozenset[DecoratorKind]:
    """A decorator that resolves to nothing, judged by its name as written."""
    kinds: set[DecoratorKind] = set()
    if text in _BUILTIN_DECORATORS:
        kinds.add(_BUILTIN_DECORATORS[text])
    if text.endswith(".setter"):
        kinds.add(DecoratorKind.PROPERTY_SETTER)
    if text.endswith("contextmanager"):
        kinds.add(DecoratorKind.CONTEXTMANAGER)
    if text.endswith("asynccontextmanager"):
        kinds.add(DecoratorKind.ASYNCCONTEXTMANAGER)
    return frozenset(kinds)


def c3_merge(seqs: list[list[str]]) -> list[str]:
    """C3's merge; an inconsistent hierarchy falls back to depth-first order."""
    result: list[str] = []
    seqs = [s for s in seqs if s]
    while seqs:
        for seq in seqs:
            head = seq[0]
            if not any(head in s[1:] for s in seqs):
                break
        else:
            head = seqs[0][0]
        result.append(head)
        seqs = [[c for c in s if c != head] for s in seqs]
        seqs = [s for s in seqs if s]
    return result
