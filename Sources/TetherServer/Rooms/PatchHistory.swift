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
    /// Empty when `version` is the newest.
    func patches(after version: Int, newest: Int) -> [PatchFrame]? {
        if version == newest { return [] }
        guard let first = patches.first, version >= first.from, version < newest else { return nil }
        return Array(patches[(version - first.from)...])
    }
}
