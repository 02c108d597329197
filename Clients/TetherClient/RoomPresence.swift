import TetherBinding
import TetherJSON
import TetherProtocol

/// One connection in a room's presence, as the server lists it (docs/PROTOCOL.md, Presence).
public struct RoomMember: Hashable, Sendable {
    /// The connection's session id: one member per connection.
    public let id: String
    /// The token's subject with auth, else the connection's own id: a person's connections share it.
    public let user: String
    public let data: JSON

    /// `data.name` when the client sent one, else the user.
    public var displayName: String { data["name"]?.stringValue ?? user }

    init?(id: String, json: JSON) {
        guard let user = json["user"]?.stringValue else { return nil }
        self.id = id
        self.user = user
        data = json["data"] ?? .object([:])
    }
}

extension RemoteRoom {
    /// The members' display names, sorted, one per user (a person with two connections once).
    public var presentNames: [String] {
        var byUser: [String: String] = [:]
        for member in members.dictionary.values.sorted(by: { $0.id < $1.id }) where byUser[member.user] == nil {
            byUser[member.user] = member.displayName
        }
        return byUser.values.sorted()
    }

    /// Replaces this connection's presence data in the room (it is sent with every rejoin too,
    /// so while not connected it waits for the next). Throws the server's error (`invalid_args`, `too_large`, `rate_limited`).
    public func setPresence(_ data: JSON) async throws {
        presenceData = data
        guard let client else { throw TetherClientError.notConnected("the client no longer exists") }
        do {
            try await client.request { id in ClientMessage.presence(room: name, data: data, id: id) }
        } catch TetherClientError.notConnected where !client.isClosed {
            // Not connected, or the connection dropped first: the next join carries the data.
        }
    }

    // MARK: From the client

    /// The connection is gone (or the room left): no members until the next snapshot.
    func forgetPresence() {
        presenceVersion = nil
        presenceDocument = .object([:])
        syncMembers()
    }

    func receivePresence(version: Int, members snapshot: JSON) {
        presenceDocument = snapshot
        presenceVersion = version
        syncMembers()
    }

    func receivePresencePatch(from: Int, version: Int, operations: [PatchOperation]) {
        guard from == presenceVersion else {
            // A gap: only a fresh snapshot (a rejoin) restores the presence mirror.
            if presenceVersion != nil {
                presenceVersion = nil
                client?.join(self)
            }
            return
        }
        do {
            try presenceDocument.apply(operations)
        } catch {
            client?.logger.warning("room \(name): presence patch \(from)->\(version) does not apply (\(error)); rejoining")
            presenceVersion = nil
            client?.join(self)
            return
        }
        presenceVersion = version
        syncMembers()
    }

    /// Makes `members` equal to the mirrored document, one event per changed member.
    private func syncMembers() {
        let document = presenceDocument.objectValue ?? [:]
        for id in Array(members.keys) where document[id] == nil { members.removeValue(forKey: id) }
        for (id, json) in document {
            guard let member = RoomMember(id: id, json: json), members[id] != member else { continue }
            members[id] = member
        }
    }
}
