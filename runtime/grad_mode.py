"""Grad modes: whether operations are recorded into the autograd graph.

The state is thread-local, as in PyTorch. Each mode works as a context manager and as a
decorator (with or without parentheses); generator functions are wrapped per step so the mode
holds only while the generator body runs.
"""

import functools
import inspect
import threading


class _State(threading.local):
    """`grad` is the grad mode users see; `enabled` (what the hot paths read) says whether
    operations are recorded: grad mode on and not in inference mode."""

    def __init__(self):
        self.grad = True
        self.inference = False
        self.enabled = True


_state = _State()


def is_grad_enabled():
    return _state.grad


def is_inference_mode_enabled():
    return _state.inference


def apply(grad, inference):
    _state.grad = bool(grad)
    _state.inference = bool(inference)
    _state.enabled = _state.grad and not _state.inference


def snapshot():
    return _state.grad, _state.inference


def restore(saved):
    apply(*saved)


class _DecoratorContextManager:
    """Shared machinery: subclasses implement __enter__/__exit__ and clone()."""

    def clone(self):
        return self.__class__()

    def __call__(self, func):
        if inspect.isclass(func):
            import warnings

            warnings.warn(f"decorating a class with {type(self).__name__} is deprecated: only "
                          f"functions and methods should be decorated", FutureWarning,
                          stacklevel=2)
            mode = self

            @functools.wraps(func, updated=())
            def construct(*args, **kwargs):
                with mode.clone():
                    return func(*args, **kwargs)

            return construct
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def _wrap_generator(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            gen = func(*args, **kwargs)
            to_send = None
            while True:
                try:
                    with self.clone():
                        item = gen.send(to_send)
                except StopIteration as stop:
                    return stop.value
                to_send = yield item

        return wrapper


class _BareDecoratable(_DecoratorContextManager):
    """A mode that may be used as `@mode` as well as `@mode()`."""

    def __new__(cls, func=None, *args, **kwargs):
        self = super().__new__(cls)
        if callable(func) and not isinstance(func, bool):
            self.__init__()
            return self(func)
        return self


class no_grad(_BareDecoratable):
    """Do not record operations; results do not require grad."""

    def __init__(self, func=None):
        self.prev = None

    def __enter__(self):
        self.prev = snapshot()
        apply(False, _state.inference)

    def __exit__(self, *exc):
        restore(self.prev)


class enable_grad(_BareDecoratable):
    """Record operations even inside a no_grad block."""

    def __init__(self, func=None):
        self.prev = None

    def __enter__(self):
        self.prev = snapshot()
        apply(True, _state.inference)  # inside inference_mode nothing is recorded anyway

    def __exit__(self, *exc):
        restore(self.prev)


class set_grad_enabled(_DecoratorContextManager):
    """Switch grad mode: immediately as a plain call, temporarily as a context or decorator."""

    def __init__(self, mode):
        self.prev = snapshot()
        self.mode = bool(mode)
        apply(self.mode, _state.inference)

    def __call__(self, func):
        restore(self.prev)
        return super().__call__(func)

    def __enter__(self):
        apply(self.mode, _state.inference)

    def __exit__(self, *exc):
        restore(self.prev)

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_BareDecoratable):
    """Like no_grad, and tensors made inside are inference tensors that autograd refuses."""

    def __init__(self, mode=True):
        self.mode = mode if isinstance(mode, bool) else True
        self.prev = None

    def __enter__(self):
        self.prev = snapshot()
        if self.mode or _state.inference:
            # PyTorch's guard sets grad mode to `not mode` and inference mode to `mode`
            apply(not self.mode, self.mode)

    def __exit__(self, *exc):
        restore(self.prev)

    def clone(self):
        return self.__class__(self.mode)
