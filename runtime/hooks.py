"""Hook handles: the object `register_hook` returns so a hook can be removed again."""

import itertools

_next_id = itertools.count()


class RemovableHandle:
    """Removes one hook from the dict it was registered in; removing twice is harmless."""

    def __init__(self, hooks_dict):
        self.id = next(_next_id)
        self._hooks = hooks_dict

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
