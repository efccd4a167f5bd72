"""Grad modes: whether operations are recorded into the autograd graph.

The state is thread-local, as in PyTorch. Each mode works as a context manager and as a
decorator (with or without parentheses); generator functions are wrapped per step so the mode
holds only while the generator body runs.
"""

import functools
import inspect
import threading


class _State(threading.local):
    def __init__(self):
        self.enabled = True
        self.inference = False


_state = _State()


def is_grad_enabled():
    return _state.enabled


def is_inference_mode_enabled():
    return _state.inference


def _set_enabled(mode):
    _state.enabled = bool(mode)


class _DecoratorContextManager:
    """Shared machinery: subclasses implement __enter__/__exit__ and clone()."""

    def clone(self):
        return self.__class__()

    def __call__(self, func):
        if inspect.isclass(func):
            raise TypeError(f"{type(self).__name__} decorates functions, not classes")
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
        self.prev = False

    def __enter__(self):
        self.prev = _state.enabled
        _state.enabled = False

    def __exit__(self, *exc):
        _state.enabled = self.prev


class enable_grad(_BareDecoratable):
    """Record operations even inside a no_grad block."""

    def __init__(self, func=None):
        self.prev = False

    def __enter__(self):
        self.prev = _state.enabled
        _state.enabled = True

    def __exit__(self, *exc):
        _state.enabled = self.prev


class set_grad_enabled(_DecoratorContextManager):
    """Switch grad mode: immediately as a plain call, temporarily as a context or decorator."""

    def __init__(self, mode):
        self.prev = _state.enabled
        self.mode = bool(mode)
        _state.enabled = self.mode

    def __call__(self, func):
        _state.enabled = self.prev
        return super().__call__(func)

    def __enter__(self):
        _state.enabled = self.mode

    def __exit__(self, *exc):
        _state.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_BareDecoratable):
    """Like no_grad, and tensors made inside are inference tensors that autograd refuses."""

    def __init__(self, mode=True):
        self.mode = mode if isinstance(mode, bool) else True
        self.prev = None

    def __enter__(self):
        self.prev = (_state.enabled, _state.inference)
        if self.mode:
            _state.enabled = False
            _state.inference = True

    def __exit__(self, *exc):
        _state.enabled, _state.inference = self.prev

    def clone(self):
        return self.__class__(self.mode)
