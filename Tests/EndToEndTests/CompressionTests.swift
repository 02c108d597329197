import Foundation
import Testing
import TetherClient
import TetherJSON
import TetherTestSupport
import TetherTransport

/// permessage-deflate through the real daemon: frames of at least the threshold are compressed
/// once per room and go as is to the clients that negotiated the extension; the others get the
/// same messages plain.
@Suite("End to end: compression", .serialized)
@MainActor
struct CompressionTests {
    /// A toggle's patch frame (about 130 bytes with its envelope) stays under it; an add or a
    /// rename with a 200-character title (about 330 bytes) goes over it.
    static let threshold = 256
    static let deflateOffer = "permessage-deflate; client_no_context_takeover"

    static func startDaemon() throws -> Daemon {
        try Daemon(arguments: ["--compression", "on", "--compression-min-bytes", "\(threshold)"])
    }

    static func client(_ daemon: Daemon, compression: Bool) async throws -> TetherClient {
        var options = ClientOptions(url: daemon.url)
        options.compression = compression
        let client = TetherClient(options: options)
        try client.connect()
        try await client.waitUntilConnected()
        return client
    }

    /// A 200-character title that differs from item to item (so the list does not compress to nothing).
    static func title(_ index: Int) -> String {
        let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
        var rng = SeededGenerator(seed: UInt64(index) + 1)
        var text = "item \(index):"
        while text.count < 200 { text += " " + words[Int(rng.next() % UInt64(words.count))] }
        return String(text.prefix(200))
    }

    /// Adds `count` items with long titles, then toggles every other one (small patches).
    static func fill(_ room: String, count: Int, using clients: [TetherClient]) async throws {
        for index in 0..<count {
            _ = try await clients[index % clients.count].send("add", to: room, args: ["title": .string(title(index))])
        }
        for index in stride(from: 0, to: count, by: 2) {
            _ = try await clients[index % clients.count].send("toggle", to: room, args: ["id": .string("t\(index + 1)")])
        }
    }

    static func bytesSent(_ daemon: Daemon) throws -> Double {
        let body = try daemon.httpGET("/metrics").body
        let line = try #require(body.split(separator: "\n").first { $0.hasPrefix("tether_bytes_sent_total ") })
        return try #require(Double(line.split(separator: " ").last ?? ""))
    }

    /// One message as it came: its JSON, whether its frame had RSV1, and its size on the wire
    /// (payload) and as JSON.
    struct Received {
        var json: JSON
        var rsv1: Bool
        var wireBytes: Int
        var jsonBytes: Int
        /// Compressed for real, not just RSV1-marked stored blocks.
        var isDeflated: Bool { rsv1 && wireBytes < jsonBytes }
    }

    /// The next text message, inflated when its frame had RSV1.
    static func receive(_ socket: RawWebSocket) throws -> Received {
        while true {
            guard case .text(let payload) = try socket.receiveFrame(timeout: .seconds(10)) else { continue }
            let rsv1 = socket.lastFrameCompressed
            let plain = rsv1 ? try #require(MessageDeflater.decompress(payload), "an RSV1 payload inflates") : payload
            return Received(json: try JSONParser().parse(plain), rsv1: rsv1, wireBytes: payload.count, jsonBytes: plain.count)
        }
    }

    /// Joins `room` on a raw socket (after its hello) and returns its snapshot.
    static func joinRaw(_ socket: RawWebSocket, room: String) throws -> Received {
        #expect(try receive(socket).json["type"] == "hello")
        try socket.send(json: ["type": "join", "room": .string(room)])
        return try receive(socket)
    }

    /// The next message, which must come compressed for real (RSV1, at least 4 times smaller
    /// than its JSON): raw inflate (raw deflate + the 00 00 ff ff tail) gives the JSON.
    static func compressedSnapshot(_ socket: RawWebSocket) throws -> JSON {
        guard case .text(let payload) = try socket.receiveFrame() else {
            Issue.record("no text frame")
            return .null
        }
        #expect(socket.lastFrameCompressed, "RSV1 set on the snapshot")
        let json = try #require(MessageDeflater.decompress(payload), "raw inflate of the payload")
        #expect(payload.count * 4 < json.count, "compressed \(payload.count) B, JSON \(json.count) B")
        return try JSONParser().parse(json)
    }

    /// Reads patch messages until `version`.
    static func readPatches(_ socket: RawWebSocket, through version: Int) throws -> [Received] {
        var patches: [Received] = []
        while true {
            let message = try receive(socket)
            #expect(message.json["type"] == "patch", "only patches flow to a pure subscriber")
            patches.append(message)
            if message.json["version"] == .int(version) { return patches }
        }
    }

    /// Compressed and plain Swift clients in one room, patches above and below the threshold:
    /// every mirror ends equal to a fresh snapshot, and a compressed client's snapshot costs the
    /// server much fewer bytes on the wire than a plain client's.
    @Test func compressedAndPlainClientsConvergeOnTheSameState() async throws {
        let daemon = try Self.startDaemon()
        defer { daemon.stop() }
        let room = "todo:compress"
        let compressed = try await Self.client(daemon, compression: true)
        let plain = try await Self.client(daemon, compression: false)
        let mirrors = [compressed.room(room), plain.room(room)]
        try await eventually("both joined") { mirrors.allSatisfy(\.isSynced) }
        // Sees which patches came compressed: both kinds must have flowed.
        let observer = try RawWebSocket(port: daemon.port, extensions: Self.deflateOffer)
        #expect(try Self.joinRaw(observer, room: room).json["type"] == "snapshot")

        try await Self.fill(room, count: 120, using: [compressed, plain])
        let renamed = try await compressed.send("rename", to: room, args: ["id": "t7", "title": .string(Self.title(999))])
        let finalVersion = try await plain.send("remove", to: room, args: ["id": "t8"])
        #expect(renamed == finalVersion - 1)

        let patches = try Self.readPatches(observer, through: finalVersion)
        #expect(patches.allSatisfy { $0.rsv1 }, "every frame to a deflate client is RSV1-marked")
        #expect(patches.count(where: \.isDeflated) >= 120, "adds and the rename go over the threshold")
        #expect(patches.count(where: { !$0.isDeflated }) >= 60, "toggles and the remove stay under it (stored)")

        // Fresh snapshots, plain and compressed, and what each cost on the wire.
        let freshPlain = try await Self.client(daemon, compression: false)
        var before = try Self.bytesSent(daemon)
        let plainReference = freshPlain.room(room)
        try await eventually { plainReference.isSynced }
        let plainJoinBytes = try Self.bytesSent(daemon) - before
        let freshCompressed = try await Self.client(daemon, compression: true)
        before = try Self.bytesSent(daemon)
        let compressedReference = freshCompressed.room(room)
        try await eventually { compressedReference.isSynced }
        let compressedJoinBytes = try Self.bytesSent(daemon) - before
        #expect(compressedJoinBytes < plainJoinBytes / 2, "compressed snapshot \(compressedJoinBytes) B, plain \(plainJoinBytes) B")

        #expect(plainReference.version == finalVersion)
        #expect(compressedReference.state == plainReference.state)
        try await eventually("every mirror reaches the final version") { mirrors.allSatisfy { $0.version == finalVersion } }
        for mirror in mirrors { #expect(mirror.state == plainReference.state) }
        #expect(plainReference.state["items"]?.arrayValue?.count == 119)
        for client in [compressed, plain, freshPlain, freshCompressed] { await client.close() }
    }

    /// A client that offers no extension gets every frame plain (RSV1 clear), snapshots and
    /// patches above the threshold included, while a client in the same room that offered it
    /// gets them compressed.
    @Test func aClientWithoutTheExtensionNeverGetsACompressedFrame() async throws {
        let daemon = try Self.startDaemon()
        defer { daemon.stop() }
        let room = "todo:plain"
        let writer = try await Self.client(daemon, compression: true)
        try await Self.fill(room, count: 20, using: [writer])

        let bare = try RawWebSocket(port: daemon.port)
        #expect(!bare.handshakeResponse.lowercased().contains("permessage-deflate"))
        let deflating = try RawWebSocket(port: daemon.port, extensions: Self.deflateOffer)
        #expect(deflating.handshakeResponse.lowercased().contains("permessage-deflate"))
        let bareJoin = try Self.joinRaw(bare, room: room)
        let deflatingJoin = try Self.joinRaw(deflating, room: room)
        #expect(!bareJoin.rsv1 && deflatingJoin.isDeflated)
        #expect(bareJoin.json["state"] == deflatingJoin.json["state"])

        try await Self.fill(room, count: 20, using: [writer])
        let finalVersion = try await writer.send("rename", to: room, args: ["id": "t1", "title": .string(Self.title(500))])
        let barePatches = try Self.readPatches(bare, through: finalVersion)
        let deflatingPatches = try Self.readPatches(deflating, through: finalVersion)
        #expect(barePatches.count == deflatingPatches.count)
        #expect(barePatches.allSatisfy { !$0.rsv1 }, "no RSV1 frame for a client that did not negotiate")
        #expect(deflatingPatches.count(where: \.isDeflated) >= 21, "the same room's big patches went compressed to the other")
        #expect(barePatches.map(\.json) == deflatingPatches.map(\.json))
        await writer.close()
    }

    /// A raw client that offers permessage-deflate gets a big snapshot with RSV1 set, smaller
    /// than the JSON; inflating it (raw deflate + the 00 00 ff ff tail) gives the plain JSON,
    /// equal to a Swift client's mirror. Small frames (hello, ack) come as stored blocks.
    @Test func aBigSnapshotArrivesCompressedAndInflatesToTheJSON() async throws {
        let daemon = try Self.startDaemon()
        defer { daemon.stop() }
        let room = "todo:inflate"
        let writer = try await Self.client(daemon, compression: false)
        let mirror = writer.room(room)
        try await Self.fill(room, count: 100, using: [writer])
        try await eventually { mirror.version == 150 }

        let socket = try RawWebSocket(port: daemon.port, extensions: Self.deflateOffer)
        let hello = try Self.receive(socket)
        #expect(hello.json["type"] == "hello")
        try socket.send(json: ["type": "join", "room": .string(room), "id": 1])
        let snapshot = try Self.compressedSnapshot(socket)
        #expect(snapshot["type"] == "snapshot" && snapshot["version"] == 150)
        #expect(snapshot["state"] == mirror.state)

        // Under the threshold: RSV1 too, but stored (a 5-byte block header and the flush byte), not compressed.
        let ack = try Self.receive(socket)
        #expect(ack.json["type"] == "ack")
        #expect(ack.rsv1 && ack.wireBytes == ack.jsonBytes + 6)
        #expect(hello.rsv1 && hello.wireBytes == hello.jsonBytes + 6)
        await writer.close()
    }

    /// A cluster node's replica compresses its snapshots as a single daemon does (once per
    /// version and view), and `GET /cluster` shows the node's socket threads.
    @Test func aClusterNodesSnapshotArrivesCompressed() async throws {
        let cluster = try ClusterFixture(nodes: ["n1", "n2"], arguments: ["--compression", "on", "--compression-min-bytes", "\(Self.threshold)"])
        defer { cluster.stop() }
        let room = "todo:cluster-inflate"
        let writer = try await cluster.client(at: "n1")
        try await Self.fill(room, count: 60, using: [writer])
        let reader = try await cluster.client(at: "n2")
        let mirror = reader.room(room)
        try await eventually { mirror.version == 90 }

        let socket = try RawWebSocket(port: cluster.node("n2").port, extensions: Self.deflateOffer)
        #expect(try Self.receive(socket).json["type"] == "hello")
        try socket.send(json: ["type": "join", "room": .string(room)])
        let snapshot = try Self.compressedSnapshot(socket)
        #expect(snapshot["type"] == "snapshot" && snapshot["version"] == 90)
        #expect(snapshot["state"] == mirror.state)

        let status = try JSON(parsing: cluster.node("n2").httpGET("/cluster").body)
        let shards = try #require(status["shards"]?.arrayValue, "GET /cluster lists the socket threads")
        #expect(!shards.isEmpty && shards.allSatisfy { $0["connections"]?.intValue != nil && $0["cpuSeconds"] != nil })
        await writer.close()
        await reader.close()
    }
}
