import TetherNATS

/// The cluster transport on NATS, as tetherd runs it: core NATS for messages, JetStream streams
/// for the rooms' logs (their RePublish makes the fan subjects), NATS KV for the buckets.
struct NATSClusterMessaging: ClusterMessaging {
    let connection: NATSConnection

    var isConnected: Bool { connection.isConnected }

    func subscribe(_ subject: String, queueGroup: String?, handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError)
        -> any ClusterSubscription {
        try connection.subscribe(subject, queueGroup: queueGroup, handler: handler)
    }

    func publish(_ subject: String, _ data: [UInt8]) throws(NATSError) {
        try connection.publish(subject, data)
    }

    func request(_ subject: String, _ data: [UInt8], timeout: Duration,
                 completion: @escaping @Sendable (Result<NATSMessage, NATSError>) -> Void) {
        connection.request(subject, data, timeout: timeout, completion: completion)
    }
}

extension NATSSubscription: ClusterSubscription {}

struct NATSClusterLog: ClusterLog {
    let jetStream: JetStream

    func append(_ subject: String, _ data: [UInt8], headers: NATSHeaders, messageID: String, expectedLastSubjectSequence: UInt64,
                timeout: Duration, completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void) {
        jetStream.publish(subject, data, headers: headers, messageID: messageID, expectedLastSubjectSequence: expectedLastSubjectSequence,
                          timeout: timeout, completion: completion)
    }

    func read(stream: String, subject: String, from sequence: UInt64, handler: @escaping @Sendable (StoredMessage) -> Void,
              completion: @escaping @Sendable (Result<UInt64?, NATSError>) -> Void) {
        jetStream.read(stream: stream, subject: subject, from: sequence, handler: handler, completion: completion)
    }

    var readsFromLeader: Int { jetStream.readsFromLeader.load(ordering: .relaxed) }

    func publish(_ subject: String, _ data: [UInt8], headers: NATSHeaders, messageID: String, expectedLastSequence: UInt64,
                 timeout: Duration, completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void) {
        jetStream.publish(subject, data, headers: headers, messageID: messageID, expectedLastSequence: expectedLastSequence, timeout: timeout,
                          completion: completion)
    }

    func lastSequence(stream: String) async throws(NATSError) -> UInt64 {
        try await jetStream.streamInfo(stream).lastSequence
    }

    func delete(stream: String, sequence: UInt64, completion: @escaping @Sendable (Result<Void, NATSError>) -> Void) {
        jetStream.deleteMessage(stream: stream, sequence: sequence, completion: completion)
    }
}

extension NATSKeyValue: ClusterKeyValue {}
