import CNATS

/// Everything that can go wrong in `TetherNATS`, as one enum so callers can switch over the cases
/// that matter to them (`wrongLastSequence`, `duplicate`, `keyExists`, `noResponders`...).
public enum NATSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The first connection attempt failed on every URL (the connection does not retry at start).
    case connectionFailed(urls: [String], reason: String)
    /// The connection is not connected right now (reconnecting): the request was not sent.
    case notConnected
    /// The connection was lost while the request was in flight: it may or may not have been
    /// processed (a JetStream publish may be stored; retry with the same `Nats-Msg-Id`).
    case disconnected
    /// The connection is closed for good.
    case closed
    /// Nobody subscribes to the subject (the server answered 503). For a JetStream publish: no
    /// stream listens on the subject right now (none exists, or its leader is being elected).
    case noResponders(subject: String)
    /// No answer within the timeout.
    case timeout(subject: String)
    /// A checked append lost: the subject's last sequence is not the expected one (JetStream
    /// error 10071, or 10164 from nats-server 2.10 on). `current` is the subject's actual last
    /// sequence when the server said it.
    case wrongLastSequence(current: UInt64?)
    /// A message with the same `Nats-Msg-Id` is already stored (within the stream's duplicate
    /// window), at `sequence`. Nothing new was stored: unless that was this caller's own earlier
    /// attempt, another writer won the slot.
    case duplicate(sequence: UInt64)
    /// A message with the same `Nats-Msg-Id` is being stored at this moment (JetStream error
    /// 10158, nats-server 2.10 on; 2.9 answers `duplicate` once it is stored). Nothing was stored
    /// by this call; the log shows, once that message is stored, whether it was this caller's
    /// own earlier attempt or another writer's.
    case duplicateInProcess
    /// Another JetStream API error, with the server's codes and text.
    case jetStream(code: Int, errorCode: Int, description: String)
    /// A stream (or KV bucket) could not be created or updated; `setting` names the JetStream
    /// setting the server refused (with its value), `detail` is the server's reason.
    case streamNotCreated(stream: String, setting: String, detail: String)
    /// `NATSKeyValue.create`: the key already has a value.
    case keyExists(key: String)
    /// `NATSKeyValue.update`: the key's revision is not `lastRevision` any more (`current` if known).
    case wrongRevision(key: String, current: UInt64?)
    case invalidArgument(String)
    /// A call into the C client failed: the operation, its status and its error text.
    case library(operation: String, status: String, detail: String)
    /// A reply that should have been JetStream JSON was not.
    case badReply(String)

    public var description: String {
        switch self {
        case .connectionFailed(let urls, let reason):
            return "could not connect to NATS at \(urls.joined(separator: ",")): \(reason)"
        case .notConnected: return "not connected to NATS (reconnecting)"
        case .disconnected: return "the NATS connection was lost while the request was in flight"
        case .closed: return "the NATS connection is closed"
        case .noResponders(let subject): return "no responders on \(subject)"
        case .timeout(let subject): return "timed out waiting for a reply on \(subject)"
        case .wrongLastSequence(let current):
            return "wrong last sequence" + (current.map { " (the subject is at \($0))" } ?? "")
        case .duplicate(let sequence): return "duplicate message id (already stored at sequence \(sequence))"
        case .duplicateInProcess: return "duplicate message id (a message with it is being stored)"
        case .jetStream(let code, let errorCode, let description):
            return "JetStream error \(errorCode) (\(code)): \(description)"
        case .streamNotCreated(let stream, let setting, let detail):
            return "JetStream stream \(stream) not created: \(setting): \(detail)"
        case .keyExists(let key): return "key \(key) already exists"
        case .wrongRevision(let key, let current):
            return "key \(key) is not at the expected revision" + (current.map { " (it is at \($0))" } ?? "")
        case .invalidArgument(let text): return text
        case .library(let operation, let status, let detail):
            return "\(operation) failed: \(status)" + (detail.isEmpty ? "" : " (\(detail))")
        case .badReply(let text): return "unexpected JetStream reply: \(text)"
        }
    }

    /// The C client's status and thread-local error text for a failed call, as an error. Call it
    /// right after the failing call, on the same thread (the text is per thread).
    static func library(_ operation: String, _ status: natsStatus) -> NATSError {
        switch status {
        case NATS_TIMEOUT: return .timeout(subject: operation)
        case NATS_NO_RESPONDERS: return .noResponders(subject: operation)
        case NATS_CONNECTION_CLOSED: return .closed
        default: break
        }
        let statusText = String(cString: natsStatus_GetText(status))
        var detail = ""
        if let text = nats_GetLastError(nil) { detail = String(cString: text) }
        if detail == statusText { detail = "" }
        return .library(operation: operation, status: statusText, detail: detail)
    }
}
