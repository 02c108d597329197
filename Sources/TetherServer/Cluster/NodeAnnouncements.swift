import TetherJSON
import TetherNATS

/// What each node of a cluster tells the others about one room over core NATS (never stored):
/// its entries as they come (`{"node", "set": entry}`) and go (`{"node", "remove": id}`), its whole
/// list every heartbeat (`{"node", LIST: [...], "beat", "part", "parts"}`, in parts of at most
/// `maxPartBytes` so a crowded node stays under NATS's message size; a list counts once every part
/// of its beat arrived, and replaces what the others knew of that node), and its list at once when
/// another node asks (`{"node", "sync": true}`). A node not heard for `silence` (killed, cut off)
/// has its entries dropped.
///
/// Cluster presence (the room's members, LIST `members`) and cluster viewers (each node's viewers,
/// LIST `viewers`) are its two uses. A value type: the caller publishes the messages it returns
/// and applies the changes it reports.
struct NodeAnnouncements<Entry> {
    static var heartbeat: Duration { .seconds(1) }
    static var silence: Duration { .seconds(3) }
    /// NATS's default limit is 1 MiB.
    static var maxPartBytes: Int { 256 << 10 }

    /// What one message, or one node's silence, changed.
    struct Change {
        let node: String
        /// Entries new, or changed (`same` tells), in the order the message had them.
        var set: [Entry] = []
        var removed: [String] = []
        var isEmpty: Bool { self.set.isEmpty && removed.isEmpty }
    }

    let node: String
    let listKey: String
    let id: (Entry) -> String
    let same: (Entry, Entry) -> Bool
    let encode: (Entry) -> JSON
    let decode: (JSON) -> Entry?
    /// The other nodes' entries, and when each node was last heard.
    private(set) var remote: [String: (entries: [String: Entry], heard: ContinuousClock.Instant)] = [:]
    private var pending: [String: (beat: Int, entries: [Entry], received: Int)] = [:]
    private var beat = 0

    init(node: String, listKey: String, id: @escaping (Entry) -> String, same: @escaping (Entry, Entry) -> Bool,
         encode: @escaping (Entry) -> JSON, decode: @escaping (JSON) -> Entry?) {
        self.node = node
        self.listKey = listKey
        self.id = id
        self.same = same
        self.encode = encode
        self.decode = decode
    }

    // MARK: Messages to publish

    func set(_ entry: Entry) -> JSON { message(["set": encode(entry)]) }
    func remove(_ id: String) -> JSON { message(["remove": .string(id)]) }
    var sync: JSON { message(["sync": true]) }

    /// This node's whole list, in parts (none when it has no entries).
    mutating func heartbeat(_ entries: [Entry]) -> [JSON] {
        guard !entries.isEmpty else { return [] }
        beat += 1
        let chunks = Self.split(entries.map(encode), maxBytes: Self.maxPartBytes)
        return chunks.enumerated().map { index, chunk in
            message([listKey: .array(chunk), "beat": .int(beat), "part": .int(index), "parts": .int(chunks.count)])
        }
    }

    private func message(_ fields: [String: JSON]) -> JSON {
        var fields = fields
        fields["node"] = .string(node)
        return .object(fields)
    }

    // MARK: Other nodes

    /// A message from the room's subject: what it changed (nil: not another node's, or unreadable),
    /// and whether its sender asks for this node's list.
    mutating func receive(_ data: [UInt8], now: ContinuousClock.Instant) -> (change: Change, syncAsked: Bool)? {
        guard let json = try? JSONParser().parse(data), let from = json["node"]?.stringValue, from != node else { return nil }
        // Taken out while changed, so the dictionary is not copied.
        var entries = remote.removeValue(forKey: from)?.entries ?? [:]
        var change = Change(node: from)
        var syncAsked = false
        if let entry = json["set"].flatMap(decode) {
            if let old = entries.updateValue(entry, forKey: id(entry)), same(old, entry) {} else { change.set.append(entry) }
        } else if let removed = json["remove"]?.stringValue {
            if entries.removeValue(forKey: removed) != nil { change.removed.append(removed) }
        } else if let list = json[listKey]?.arrayValue,
                  let whole = completeList(list.compactMap(decode), from: from, beat: json["beat"]?.intValue ?? 0,
                                           parts: json["parts"]?.intValue ?? 1) {
            var listed: [String: Entry] = [:]
            for entry in whole {
                listed[id(entry)] = entry
                if let old = entries[id(entry)], same(old, entry) { continue }
                change.set.append(entry)
            }
            change.removed = entries.keys.filter { listed[$0] == nil }
            entries = listed
        } else if json["sync"]?.boolValue == true {
            syncAsked = true
        }
        remote[from] = (entries, now)
        return (change, syncAsked)
    }

    /// Nodes not heard for `silence`: their entries are gone.
    mutating func expire(now: ContinuousClock.Instant) -> [Change] {
        var changes: [Change] = []
        for (name, known) in remote where now - known.heard > Self.silence {
            remote[name] = nil
            if !known.entries.isEmpty { changes.append(Change(node: name, removed: Array(known.entries.keys))) }
        }
        return changes
    }

    /// One part of a node's heartbeat: the node's whole list once every part of its beat arrived
    /// (a part lost with core NATS leaves that beat incomplete; the next one replaces it).
    private mutating func completeList(_ entries: [Entry], from node: String, beat: Int, parts: Int) -> [Entry]? {
        guard parts > 1 else { return entries }
        var received = pending.removeValue(forKey: node) ?? (beat, [], 0)
        if received.beat != beat { received = (beat, [], 0) }
        received.entries += entries
        received.received += 1
        guard received.received == parts else {
            pending[node] = received
            return nil
        }
        return received.entries
    }

    /// `entries` in consecutive parts of at most `maxBytes` encoded (an entry larger than that alone).
    static func split(_ entries: [JSON], maxBytes: Int) -> [[JSON]] {
        var chunks: [[JSON]] = [[]]
        var bytes = 0
        for entry in entries {
            let size = entry.encoded().count + 1
            if bytes + size > maxBytes, !chunks[chunks.count - 1].isEmpty {
                chunks.append([])
                bytes = 0
            }
            chunks[chunks.count - 1].append(entry)
            bytes += size
        }
        return chunks
    }
}
