import CNATS
import Foundation
import Synchronization
import TetherJSON

/// JetStream on a `NATSConnection`: streams, checked appends, reads, KV buckets.
///
/// Publishing and reading single messages (`publish`, `lastMessage`, `message`) are requests on
/// the connection's reply inbox: they never block and complete on a NATS thread (see
/// `NATSConnection`'s threading rules). Management (`addOrUpdateStream`, `streamInfo`,
/// `deleteStream`, `keyValue`) runs the C client's blocking calls on threads of their own, behind
/// `async`. The connection's reconnects are the context's: nothing to redo after one.
public final class JetStream: @unchecked Sendable {
    // @unchecked: the C context is thread-safe and immutable after creation.
    public let connection: NATSConnection
    /// How long each JetStream call waits for its answer unless told otherwise.
    public let timeout: Duration
    let context: OpaquePointer
    /// Catch-up reads whose consumer fell short of the subject's end (its replica was behind the
    /// stream leader) and read the rest from the leader.
    public let readsFromLeader = Atomic<Int>(0)
    /// Tests only: catch-up consumers behave as if served by a replica whose log ends at this
    /// stream sequence (a follower behind its leader); nil (always, outside tests): they don't.
    package let consumerReplicaEndForTests = Mutex<UInt64?>(nil)
    /// Tests only: catch-up consumers lose the message with this consumer sequence on the way (as
    /// the C client drops messages for a slow consumer); nil outside tests.
    package let consumerDropsForTests = Mutex<UInt64?>(nil)

    init(connection: NATSConnection, timeout: Duration) throws(NATSError) {
        self.connection = connection
        self.timeout = timeout
        var options = jsOptions()
        jsOptions_Init(&options)
        options.Wait = timeout.milliseconds
        var contextPointer: OpaquePointer?
        let status = natsConnection_JetStream(&contextPointer, connection.pointer, &options)
        guard status == NATS_OK, let contextPointer else { throw .library("natsConnection_JetStream", status) }
        context = contextPointer
    }

    deinit { jsCtx_Destroy(context) }

    // MARK: Publishing

    /// Appends `data` to the stream that holds `subject` and calls `completion` once with the
    /// stream sequence it was stored at (after the stream's replicas have it), or:
    /// - `wrongLastSequence` when `expectedLastSubjectSequence` is given and the subject's last
    ///   sequence differs (0 expects the subject to be empty): the checked append lost;
    /// - `duplicate(sequence:)` when a message with the same `messageID` is already stored;
    /// - `noResponders` (no stream on the subject, or its leader is being elected), `timeout`,
    ///   `notConnected`, `disconnected`, or `jetStream` with the server's error code.
    ///
    /// On nats-server 2.9.10 the expected-sequence check alone can let two concurrent writers on
    /// different servers both win (nats-server issue 4320): give both the same `messageID` for
    /// the same slot (e.g. room/epoch/from-version), and only one is stored.
    ///
    /// Never blocks; `completion` runs on the connection's reply thread and must return quickly.
    public func publish(_ subject: String, _ data: [UInt8], headers: NATSHeaders = NATSHeaders(),
                        messageID: String? = nil, expectedLastSubjectSequence: UInt64? = nil, expectedLastSequence: UInt64? = nil,
                        timeout: Duration? = nil, completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void) {
        var headers = headers
        if let messageID { headers["Nats-Msg-Id"] = messageID }
        if let expectedLastSubjectSequence { headers["Nats-Expected-Last-Subject-Sequence"] = String(expectedLastSubjectSequence) }
        // The stream's last sequence: unchanged by deleting messages, unlike a subject's.
        if let expectedLastSequence { headers["Nats-Expected-Last-Sequence"] = String(expectedLastSequence) }
        connection.request(subject, data, headers: headers, timeout: timeout ?? self.timeout) { result in
            completion(result.flatMap { Self.publishAcknowledgement($0.data) })
        }
    }

    public func publish(_ subject: String, _ data: [UInt8], headers: NATSHeaders = NATSHeaders(),
                        messageID: String? = nil, expectedLastSubjectSequence: UInt64? = nil,
                        timeout: Duration? = nil) async throws(NATSError) -> UInt64 {
        let result = await withCheckedContinuation { continuation in
            publish(subject, data, headers: headers, messageID: messageID,
                    expectedLastSubjectSequence: expectedLastSubjectSequence, timeout: timeout) {
                continuation.resume(returning: $0)
            }
        }
        return try result.get()
    }

    /// Reads a PubAck: `{"stream":"S","seq":5}`, `{"stream":"S","seq":5,"duplicate":true}` or
    /// `{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 4"}}`.
    static func publishAcknowledgement(_ reply: [UInt8]) -> Result<UInt64, NATSError> {
        let json: JSON
        do { json = try JSONParser().parse(reply) } catch { return .failure(.badReply(String(decoding: reply, as: UTF8.self))) }
        if let error = apiError(json) {
            // 10071 names the subject's sequence; 10164 (nats-server 2.10 on, clustered) does not.
            if case .jetStream(_, 10071, let description) = error {
                return .failure(.wrongLastSequence(current: description.split(separator: " ").last.flatMap { UInt64($0) }))
            }
            if case .jetStream(_, 10164, _) = error { return .failure(.wrongLastSequence(current: nil)) }
            if case .jetStream(_, 10158, _) = error { return .failure(.duplicateInProcess) }
            return .failure(error)
        }
        guard let sequence = json["seq"]?.intValue else { return .failure(.badReply(String(decoding: reply, as: UTF8.self))) }
        if json["duplicate"]?.boolValue == true { return .failure(.duplicate(sequence: UInt64(sequence))) }
        return .success(UInt64(sequence))
    }

    static func apiError(_ json: JSON) -> NATSError? {
        guard let error = json["error"] else { return nil }
        return .jetStream(code: error["code"]?.intValue ?? 0, errorCode: error["err_code"]?.intValue ?? 0,
                          description: error["description"]?.stringValue ?? "")
    }

    // MARK: Reading single messages

    /// The last message stored on `subject` in `stream`, or nil if it has none. Read from the
    /// stream leader, so it reflects every acknowledged append.
    public func lastMessage(stream: String, subject: String, completion: @escaping @Sendable (Result<StoredMessage?, NATSError>) -> Void) {
        getMessage(stream: stream, request: ["last_by_subj": .string(subject)], completion: completion)
    }

    public func lastMessage(stream: String, subject: String) async throws(NATSError) -> StoredMessage? {
        let result = await withCheckedContinuation { continuation in
            lastMessage(stream: stream, subject: subject) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// The message at `sequence` in `stream`, or nil if there is none (never stored, deleted or
    /// aged out).
    public func message(stream: String, sequence: UInt64) async throws(NATSError) -> StoredMessage? {
        let result = await withCheckedContinuation { continuation in
            getMessage(stream: stream, request: ["seq": .int(Int(sequence))]) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Removes the message at `sequence` from `stream` (`$JS.API.STREAM.MSG.DELETE`, without
    /// erasing: the space is reused). Deleting a message that is gone already succeeds.
    public func deleteMessage(stream: String, sequence: UInt64, completion: @escaping @Sendable (Result<Void, NATSError>) -> Void) {
        let request: JSON = ["seq": .int(Int(sequence)), "no_erase": true]
        connection.request("$JS.API.STREAM.MSG.DELETE.\(stream)", JSONWriter.encode(request), timeout: timeout) { result in
            completion(result.flatMap { reply in
                guard let json = try? JSONParser().parse(reply.data) else { return .failure(.badReply(String(decoding: reply.data, as: UTF8.self))) }
                // No message at that sequence (deleted before, or aged out) is what was asked.
                if let error = Self.apiError(json) {
                    // 10037 no message found; 10043 sequence not found (already deleted, 2.9).
                    if case .jetStream(_, let code, let description) = error,
                       code == 10037 || code == 10043 || description.contains("no message found") || description.contains("not found") {
                        return .success(())
                    }
                    return .failure(error)
                }
                return .success(())
            })
        }
    }

    /// `$JS.API.STREAM.MSG.GET`: answered by the stream leader, as JSON with base64 headers and data.
    func getMessage(stream: String, request: JSON, completion: @escaping @Sendable (Result<StoredMessage?, NATSError>) -> Void) {
        connection.request("$JS.API.STREAM.MSG.GET.\(stream)", JSONWriter.encode(request), timeout: timeout) { result in
            completion(result.flatMap { Self.storedMessage($0.data) })
        }
    }

    static func storedMessage(_ reply: [UInt8]) -> Result<StoredMessage?, NATSError> {
        let json: JSON
        do { json = try JSONParser().parse(reply) } catch { return .failure(.badReply(String(decoding: reply, as: UTF8.self))) }
        if let error = apiError(json) {
            if case .jetStream(_, 10037, _) = error { return .success(nil) }  // no message found
            return .failure(error)
        }
        guard let message = json["message"], let subject = message["subject"]?.stringValue,
              let sequence = message["seq"]?.intValue else {
            return .failure(.badReply(String(decoding: reply, as: UTF8.self)))
        }
        let headers = message["hdrs"]?.stringValue.flatMap { Data(base64Encoded: $0) }.map { NATSHeaders(parsing: Array($0)) }
        let data = message["data"]?.stringValue.flatMap { Data(base64Encoded: $0) }.map { Array($0) }
        return .success(StoredMessage(subject: subject, sequence: UInt64(sequence), headers: headers ?? NATSHeaders(), data: data ?? []))
    }

    // MARK: Streams

    public struct StreamConfiguration: Sendable, Equatable {
        public enum Storage: Sendable, Equatable { case file, memory }

        /// Sends each stored message on to another subject once committed, with `Nats-Stream`,
        /// `Nats-Subject`, `Nats-Sequence` and `Nats-Last-Sequence` (the subject's previous
        /// sequence) headers, so subscribers can detect gaps.
        public struct RePublish: Sendable, Equatable {
            public var source: String
            public var destination: String
            public var headersOnly = false
            public init(source: String, destination: String, headersOnly: Bool = false) {
                self.source = source
                self.destination = destination
                self.headersOnly = headersOnly
            }
        }

        public var name: String
        public var subjects: [String]
        public var replicas = 1
        public var storage = Storage.file
        /// nil: no limit.
        public var maxAge: Duration?
        public var maxBytes: Int64?
        public var maxMessagesPerSubject: Int64?
        /// How long `Nats-Msg-Id`s are remembered (the server's default is 2 minutes).
        public var duplicateWindow: Duration?
        public var rePublish: RePublish?

        public init(name: String, subjects: [String], replicas: Int = 1, storage: Storage = .file,
                    maxAge: Duration? = nil, maxBytes: Int64? = nil, maxMessagesPerSubject: Int64? = nil,
                    duplicateWindow: Duration? = nil, rePublish: RePublish? = nil) {
            self.name = name
            self.subjects = subjects
            self.replicas = replicas
            self.storage = storage
            self.maxAge = maxAge
            self.maxBytes = maxBytes
            self.maxMessagesPerSubject = maxMessagesPerSubject
            self.duplicateWindow = duplicateWindow
            self.rePublish = rePublish
        }
    }

    public struct StreamInfo: Sendable, Equatable {
        public struct Peer: Sendable, Equatable {
            public let name: String
            public let current: Bool
            public let offline: Bool
        }
        public let name: String
        public let messages: UInt64
        public let firstSequence: UInt64
        public let lastSequence: UInt64
        /// The server leading the stream's Raft group (nil when not clustered or during an election).
        public let leader: String?
        /// The other servers holding replicas.
        public let replicas: [Peer]
    }

    /// Creates the stream, or updates it if it exists with another configuration. Errors name the
    /// JetStream setting the server refused (`streamNotCreated`).
    public func addOrUpdateStream(_ configuration: StreamConfiguration) async throws(NATSError) -> StreamInfo {
        try await Blocking.run { () throws(NATSError) in try Self.addOrUpdateStream(self.context, configuration) }
    }

    private static func addOrUpdateStream(_ context: OpaquePointer, _ configuration: StreamConfiguration) throws(NATSError) -> StreamInfo {
        let strings = CStrings()
        var config = jsStreamConfig()
        jsStreamConfig_Init(&config)
        config.Name = strings.make(configuration.name)
        let subjects = strings.array(configuration.subjects)
        config.Subjects = subjects
        config.SubjectsLen = Int32(configuration.subjects.count)
        config.Replicas = Int64(configuration.replicas)
        config.Storage = configuration.storage == .file ? js_FileStorage : js_MemoryStorage
        if let maxAge = configuration.maxAge { config.MaxAge = Int64(maxAge.nanoseconds) }
        if let maxBytes = configuration.maxBytes { config.MaxBytes = maxBytes }
        if let perSubject = configuration.maxMessagesPerSubject { config.MaxMsgsPerSubject = perSubject }
        if let window = configuration.duplicateWindow { config.Duplicates = Int64(window.nanoseconds) }
        var rePublish = jsRePublish()
        jsRePublish_Init(&rePublish)
        if let republish = configuration.rePublish {
            rePublish.Source = strings.make(republish.source)
            rePublish.Destination = strings.make(republish.destination)
            rePublish.HeadersOnly = republish.headersOnly
        }
        return try withUnsafeMutablePointer(to: &rePublish) { rePublishPointer throws(NATSError) -> StreamInfo in
            if configuration.rePublish != nil { config.RePublish = rePublishPointer }
            var info: UnsafeMutablePointer<jsStreamInfo>?
            var errorCode = jsErrCode(0)
            var status = js_AddStream(&info, context, &config, nil, &errorCode)
            if status != NATS_OK, errorCode.rawValue == 10058 {  // exists with another configuration
                jsStreamInfo_Destroy(info)
                info = nil
                errorCode = jsErrCode(0)
                status = js_UpdateStream(&info, context, &config, nil, &errorCode)
            }
            guard status == NATS_OK, let info else {
                throw streamError(configuration, status: status, errorCode: Int(errorCode.rawValue))
            }
            defer { jsStreamInfo_Destroy(info) }
            return StreamInfo(info.pointee)
        }
    }

    /// The stream's state and cluster placement.
    public func streamInfo(_ name: String) async throws(NATSError) -> StreamInfo {
        try await Blocking.run { () throws(NATSError) in
            var info: UnsafeMutablePointer<jsStreamInfo>?
            var errorCode = jsErrCode(0)
            let status = js_GetStreamInfo(&info, self.context, name, nil, &errorCode)
            guard status == NATS_OK, let info else { throw Self.apiError("stream info \(name)", status, errorCode) }
            defer { jsStreamInfo_Destroy(info) }
            return StreamInfo(info.pointee)
        }
    }

    public func deleteStream(_ name: String) async throws(NATSError) {
        try await Blocking.run { () throws(NATSError) in
            var errorCode = jsErrCode(0)
            let status = js_DeleteStream(self.context, name, nil, &errorCode)
            guard status == NATS_OK else { throw Self.apiError("delete stream \(name)", status, errorCode) }
        }
    }

    /// A failed JetStream API call of the C client as an error (call on the failing thread).
    static func apiError(_ operation: String, _ status: natsStatus, _ errorCode: jsErrCode) -> NATSError {
        let error = NATSError.library(operation, status)
        guard errorCode.rawValue != 0 else { return error }
        let detail = if case .library(_, _, let detail) = error { detail } else { error.description }
        return .jetStream(code: 0, errorCode: Int(errorCode.rawValue), description: detail)
    }

    /// Names the setting behind a refused stream configuration.
    static func streamError(_ configuration: StreamConfiguration, status: natsStatus, errorCode: Int) -> NATSError {
        let error = apiError("create stream \(configuration.name)", status, jsErrCode(UInt32(errorCode)))
        let detail: String
        switch error {
        case .jetStream(_, let code, let description): detail = "\(description) (JetStream error \(code))"
        case .noResponders, .timeout:
            return .streamNotCreated(stream: configuration.name, setting: "jetstream",
                                     detail: "no JetStream API answered (is JetStream enabled on the servers, with a meta leader?)")
        default: return error
        }
        let maxBytes = configuration.maxBytes.map(String.init) ?? "unlimited"
        let setting = switch errorCode {
        case 10074, 10005: "replicas = \(configuration.replicas)"
        case 10023, 10047, 10122, 10113: "max_bytes = \(maxBytes) (storage \(configuration.storage))"
        case 10028: "storage = memory, max_bytes = \(maxBytes)"
        case 10065: "subjects = \(configuration.subjects.joined(separator: ","))"
        case 10039, 10076: "jetstream (not enabled for the account or server)"
        case 10061: "replicas = \(configuration.replicas) (can not be changed on this stream)"
        default: "configuration"
        }
        return .streamNotCreated(stream: configuration.name, setting: setting, detail: detail)
    }
}

extension JetStream.StreamInfo {
    init(_ info: jsStreamInfo) {
        name = info.Config.map { String(cString: $0.pointee.Name) } ?? ""
        messages = info.State.Msgs
        firstSequence = info.State.FirstSeq
        lastSequence = info.State.LastSeq
        var leader: String?
        var replicas: [Peer] = []
        if let cluster = info.Cluster?.pointee {
            if let name = cluster.Leader, name.pointee != 0 { leader = String(cString: name) }
            for index in 0..<Int(cluster.ReplicasLen) {
                guard let peer = cluster.Replicas[index]?.pointee else { continue }
                replicas.append(Peer(name: peer.Name.map { String(cString: $0) } ?? "", current: peer.Current, offline: peer.Offline))
            }
        }
        self.leader = leader
        self.replicas = replicas
    }
}

/// C strings that live as long as this object (for the C client's configuration structs).
final class CStrings {
    private var owned: [UnsafeMutableRawPointer] = []

    func make(_ string: String) -> UnsafePointer<CChar> {
        let pointer = strdup(string)!
        owned.append(pointer)
        return UnsafePointer(pointer)
    }

    /// A `const char **` array of copies of `strings`.
    func array(_ strings: [String]) -> UnsafeMutablePointer<UnsafePointer<CChar>?> {
        let raw = malloc(max(1, strings.count) * MemoryLayout<UnsafePointer<CChar>?>.stride)!
        let array = raw.bindMemory(to: UnsafePointer<CChar>?.self, capacity: max(1, strings.count))
        for (index, string) in strings.enumerated() { array[index] = make(string) }
        owned.append(raw)
        return array
    }

    deinit {
        for pointer in owned { free(pointer) }
    }
}
