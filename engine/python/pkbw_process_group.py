"""torch.distributed's default process group over a store pkbw already holds, for the Python judge
(its ranks' group) and its candidate's process (the candidates' group): one place for the call and for
the torch versions that lack init_process_group's device_id.
"""


def init_default_group(dist, store, rank, world, device=None):
    """The default group of `world` ranks over `store` (prefixed as init_process_group prefixes an
    env:// store): NCCL bound to `device` on a GPU, gloo when `device` is None. torch before 2.3 has
    no device_id (a TypeError): the group is then made without it, and NCCL picks the current device,
    which the caller has set."""
    kwargs = {"backend": "gloo" if device is None else "nccl", "store": dist.PrefixStore("default_pg", store),
              "rank": rank, "world_size": world}
    if device is None:
        dist.init_process_group(**kwargs)
        return
    try:
        dist.init_process_group(**kwargs, device_id=device)
    except TypeError:
        dist.init_process_group(**kwargs)
