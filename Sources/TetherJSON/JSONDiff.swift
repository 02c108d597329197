extension JSONPatch {
    /// Operations that turn `old` into `new`: for objects, the members added, removed or changed;
    /// for arrays, the items between their common head and tail, changed in place, then the ones
    /// inserted or removed (so one item added or removed is one operation). Not minimal (no
    /// moves), but applying it to `old` always gives `new`.
    public static func difference(from old: JSON, to new: JSON) -> [PatchOperation] {
        var operations: [PatchOperation] = []
        difference(from: old, to: new, at: .root, into: &operations)
        return operations
    }

    private static func difference(from old: JSON, to new: JSON, at path: JSONPointer, into operations: inout [PatchOperation]) {
        guard old != new else { return }
        switch (old, new) {
        case (.object(let before), .object(let after)):
            for key in before.keys.sorted() where after[key] == nil {
                operations.append(.remove(path: path.appending(key)))
            }
            for key in after.keys.sorted() {
                guard let value = after[key] else { continue }
                if let previous = before[key] {
                    difference(from: previous, to: value, at: path.appending(key), into: &operations)
                } else {
                    operations.append(.add(path: path.appending(key), value: value))
                }
            }
        case (.array(let before), .array(let after)):
            var head = 0
            while head < min(before.count, after.count), before[head] == after[head] { head += 1 }
            var tail = 0
            while tail < min(before.count, after.count) - head, before[before.count - 1 - tail] == after[after.count - 1 - tail] { tail += 1 }
            let removedEnd = before.count - tail, addedEnd = after.count - tail
            let paired = min(removedEnd, addedEnd) - head
            for offset in 0..<paired {
                difference(from: before[head + offset], to: after[head + offset], at: path.appending(index: head + offset), into: &operations)
            }
            // Removed from the last so the indices before stay put; added in order.
            for index in stride(from: removedEnd - 1, through: head + paired, by: -1) {
                operations.append(.remove(path: path.appending(index: index)))
            }
            for index in (head + paired)..<max(addedEnd, head + paired) {
                operations.append(.add(path: path.appending(index: index), value: after[index]))
            }
        default:
            operations.append(.replace(path: path, value: new))
        }
    }
}
