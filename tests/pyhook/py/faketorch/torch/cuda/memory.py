# torch.cuda.memory stand-in: host_memory_stats() as in recent torch (flat keys).
pinned = [0]


def host_memory_stats():
    return {"allocated_bytes.current": pinned[0], "allocations.current": 1}
