"""Round-robin queue of the site's data shards (one shard per local step)."""


class ShardQueue:
    def __init__(self, n_rows, n_shards):
        self.bounds = [(i * n_rows // n_shards, (i + 1) * n_rows // n_shards) for i in range(n_shards)]
        self.pos = 0

    def next(self):
        lo, hi = self.bounds[self.pos % len(self.bounds)]
        self.pos += 1
        return lo, hi
