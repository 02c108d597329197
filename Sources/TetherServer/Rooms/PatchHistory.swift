import DequeModule

/// A room's recent patches, bounded by count and by bytes, for resuming clients.
struct PatchHistory {
    private(set) var patches: Deque<PatchFrame> = []
    private(set) var byteCount = 0
    let maxPatches: Int
    let maxBytes: Int

    init(maxPatches: Int, maxBytes: Int) {
        self.maxPatches = maxPatches
        self.maxBytes = maxBytes
    }

    mutating func append(_ patch: PatchFrame) {
        if let last = patches.last, last.version != patch.from || last.epoch != patch.epoch {
            removeAll()  // not contiguous: never serve a resume across the gap
        }
        patches.append(patch)
        byteCount += patch.byteCount
        while patches.count > maxPatches || (byteCount > maxBytes && !patches.isEmpty) {
            byteCount -= patches.removeFirst().byteCount
        }
    }

    mutating func removeAll() {
        patches.removeAll()
        byteCount = 0
    }

    /// Every patch after `version` up to the newest, when all of them are held; nil otherwise.
    /// Empty when `version` is the newest. A patch may span several versions (a cluster's log
    /// merges them): resuming needs one that starts exactly at `version`.
    func patches(after version: Int, newest: Int) -> [PatchFrame]? {
        if version == newest { return [] }
        guard let first = patches.first, version >= first.from, version < newest else { return nil }
        // `from` grows along the history: find the patch starting at `version`.
        var low = 0, high = patches.count - 1
        while low <= high {
            let middle = (low + high) / 2
            let from = patches[middle].from
            if from == version { return Array(patches[middle...]) }
            if from < version { low = middle + 1 } else { high = middle - 1 }
        }
        return nil
    }
}
