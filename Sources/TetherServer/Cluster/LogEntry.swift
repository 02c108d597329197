import TetherJSON
import TetherNATS
import TetherProtocol
import TetherState

/// One message of a room's log in the cluster: a version step (a patch frame, possibly
/// spanning several versions), the start of an epoch (a snapshot frame), or a checkpoint (a
/// snapshot frame of the state the steps before it made, for the room's history: rebuilding a
/// version needs one at or before it once the epoch's start has left the log). The data is the
/// frame exactly as clients receive it; the headers say what it is without parsing it.
///
/// In a room with per-viewer values, a version step that changed what some viewers see beyond
/// the shared document carries their new projections after the frame: the header
/// `Tether-Frame-Length` gives the frame's length, the rest of the data is
/// `{node: {viewerID: projection}}` (Cluster/ClusterViewers.swift). A step that changed the
/// ViewModel's stored state carries its operations last, and an epoch's start the whole stored
/// state: the header `Tether-Stored-Length` gives their length at the end of the data. A step
/// whose events webhook endpoints want carries them after that (`Tether-Webhooks-Length`): in
/// the log they are as durable as the step, and the owner copies them into the webhook stream
/// (Cluster/PendingWebhooks.swift; `Tether-Webhooks-Copied` names the last it copied). Without
/// any of these (every plain room), the data is the frame alone.
struct LogEntry: Sendable {
    enum Kind: String, Sendable {
        case patch, snapshot, checkpoint

        /// A whole state (`snapshot` or `checkpoint`): where rebuilding a version may start.
        var holdsState: Bool { self != .patch }
    }

    var kind: Kind
    var epoch: String
    var from: Int
    var version: Int
    /// The node that appended it.
    var node: String
    /// The owner's term: a random id per time a node takes the room. With the message id it is
    /// the entry's identity: an owner acks an action only when the log holds *its* entry
    /// (same term and slot), never because the log reached some version.
    var term: String
    var frame: [UInt8]
    /// The changed projections of viewers on each node, `{node: {viewerID: projection}}`; nil
    /// when none changed.
    var projections: JSON?
    /// The ViewModel's stored state (`ViewModelContext.stored`), which clients never see: for a
    /// patch, the operations its steps made on it (nil: none); for a snapshot, all of it.
    var stored: JSON?
    /// The numbered actions its steps applied, at which version (header `Tether-Actions`,
    /// `[[client, seq, version], ...]`): every node's replica keeps them, so a new owner
    /// answers their repeats (Rooms/ActionOutcomes.swift).
    var actions: [AppliedAction] = []
    /// The events its steps recorded for webhook endpoints.
    var webhooks: [WebhookDelivery] = []
    /// The last event of the room the owner had copied into the webhook stream when it appended
    /// this (`PendingWebhooks.key`).
    var webhooksCopied: String?
    /// What made each of its versions (a JSON array of `StepProvenance` records with `version`
    /// and `ops`, their operations' count in the frame), for the room's history: the header
    /// `Tether-Steps`, which nodes that know nothing of it ignore.
    var steps: [UInt8]?

    var headers: NATSHeaders {
        var headers: NATSHeaders = ["Tether-Kind": kind.rawValue, "Tether-Epoch": epoch, "Tether-From": String(from),
                                    "Tether-Version": String(version), "Tether-Node": node, "Tether-Term": term]
        if projections != nil { headers["Tether-Frame-Length"] = String(frame.count) }
        if let storedBytes { headers["Tether-Stored-Length"] = String(storedBytes.count) }
        if !actions.isEmpty { headers["Tether-Actions"] = String(decoding: ActionOutcomes.json(actions).encoded(), as: UTF8.self) }
        if let webhooksBytes { headers["Tether-Webhooks-Length"] = String(webhooksBytes.count) }
        if let webhooksCopied { headers["Tether-Webhooks-Copied"] = webhooksCopied }
        if let steps { headers["Tether-Steps"] = String(decoding: steps, as: UTF8.self) }
        return headers
    }

    /// The message's data: the frame, then the projections, the stored state and the webhook
    /// events if any.
    var data: [UInt8] {
        guard projections != nil || stored != nil || !webhooks.isEmpty else { return frame }
        return frame + (projections?.encoded() ?? []) + (storedBytes ?? []) + (webhooksBytes ?? [])
    }

    private var storedBytes: [UInt8]? { stored?.encoded() }
    private var webhooksBytes: [UInt8]? { webhooks.isEmpty ? nil : JSON.array(webhooks.map(\.json)).encoded() }

    /// Every append of one slot (room, epoch, first version) carries the same id, so of two
    /// owners continuing the same version only one append is stored (see docs/CLUSTER.md).
    func messageID(room: String) -> String {
        switch kind {
        case .patch: "\(room)/\(epoch)/\(from)"
        case .snapshot: "\(room)/\(epoch)/start-\(from)"
        case .checkpoint: "\(room)/\(epoch)/checkpoint-\(from)"
        }
    }

    /// Whether `other` is this very append (not another owner's entry for the same slot).
    func isSameAppend(as other: LogEntry) -> Bool {
        term == other.term && node == other.node && kind == other.kind && epoch == other.epoch && from == other.from && version == other.version
    }

    init(kind: Kind, epoch: String, from: Int, version: Int, node: String, term: String, frame: [UInt8], projections: JSON? = nil,
         stored: JSON? = nil, actions: [AppliedAction] = [], webhooks: [WebhookDelivery] = [], steps: [UInt8]? = nil) {
        self.kind = kind
        self.epoch = epoch
        self.from = from
        self.version = version
        self.node = node
        self.term = term
        self.frame = frame
        self.projections = projections
        self.stored = stored
        self.actions = actions
        self.webhooks = webhooks
        self.steps = steps
    }

    init?(headers: NATSHeaders, data: [UInt8]) {
        guard let kind = headers["Tether-Kind"].flatMap(Kind.init(rawValue:)), let epoch = headers["Tether-Epoch"],
              let from = headers["Tether-From"].flatMap({ Int($0) }), let version = headers["Tether-Version"].flatMap({ Int($0) })
        else { return nil }
        var frame = data
        var webhooks: [WebhookDelivery] = []
        if let length = headers["Tether-Webhooks-Length"].flatMap({ Int($0) }) {
            guard length <= frame.count, let parsed = try? JSONParser().parse(Array(frame[(frame.count - length)...])),
                  let list = parsed.arrayValue else { return nil }
            frame.removeLast(length)
            webhooks = list.compactMap(WebhookDelivery.init(json:))
        }
        var stored: JSON?
        if let length = headers["Tether-Stored-Length"].flatMap({ Int($0) }) {
            guard length <= frame.count, let parsed = try? JSONParser().parse(Array(frame[(frame.count - length)...])) else { return nil }
            frame.removeLast(length)
            stored = parsed
        }
        var projections: JSON?
        if let length = headers["Tether-Frame-Length"].flatMap({ Int($0) }) {
            guard length <= frame.count, let parsed = try? JSONParser().parse(Array(frame[length...])) else { return nil }
            frame = Array(frame[..<length])
            projections = parsed
        }
        let actions = headers["Tether-Actions"].flatMap { try? JSONParser().parse(Array($0.utf8)) }
        self.init(kind: kind, epoch: epoch, from: from, version: version, node: headers["Tether-Node"] ?? "",
                  term: headers["Tether-Term"] ?? "", frame: frame, projections: projections, stored: stored, actions: ActionOutcomes.records(actions),
                  webhooks: webhooks)
        webhooksCopied = headers["Tether-Webhooks-Copied"]
        steps = headers["Tether-Steps"].map { Array($0.utf8) }
    }
}

/// A room's snapshot as the cluster keeps it (KV): the state at `version`, which the log message
/// at stream sequence `sequence` produced. Rebuilding reads the log after `sequence`.
struct ClusterSnapshot: Sendable {
    var epoch: String
    var version: Int
    var sequence: UInt64
    var state: JSON
    /// The ViewModel's stored state at `version` (nil: none kept).
    var stored: JSON?
    /// The numbered actions' outcomes the room remembers at `version` (`ActionOutcomes.applied`).
    var actions: [AppliedAction] = []
    /// Webhook events not yet known to be in the webhook stream (`PendingWebhooks`).
    var webhooks: [WebhookDelivery] = []

    var encoded: [UInt8] {
        var object: [String: JSON] = ["epoch": .string(epoch), "version": .int(version), "sequence": .int(Int(sequence)), "state": state]
        if let stored { object["stored"] = stored }
        if !actions.isEmpty { object["actions"] = ActionOutcomes.json(actions) }
        if !webhooks.isEmpty { object["webhooks"] = .array(webhooks.map(\.json)) }
        return JSON.object(object).encoded()
    }

    init(epoch: String, version: Int, sequence: UInt64, state: JSON, stored: JSON? = nil, actions: [AppliedAction] = [],
         webhooks: [WebhookDelivery] = []) {
        self.epoch = epoch
        self.version = version
        self.sequence = sequence
        self.state = state
        self.stored = stored
        self.actions = actions
        self.webhooks = webhooks
    }

    init?(_ bytes: [UInt8]) {
        guard let json = try? JSONParser().parse(bytes), let epoch = json["epoch"]?.stringValue,
              let version = json["version"]?.intValue, let sequence = json["sequence"]?.intValue, let state = json["state"]
        else { return nil }
        self.init(epoch: epoch, version: version, sequence: UInt64(sequence), state: state, stored: json["stored"],
                  actions: ActionOutcomes.records(json["actions"]),
                  webhooks: json["webhooks"]?.arrayValue?.compactMap(WebhookDelivery.init(json:)) ?? [])
    }
}

/// An action forwarded to a room's owner, with who sent it, and its answer.
enum ForwardedAction {
    static func request(name: String, args: JSON?, number: ActionNumber? = nil, viewer: Viewer) -> [UInt8] {
        var request: [String: JSON] = ["name": .string(name), "args": args ?? .null, "viewer": ["id": .string(viewer.id), "claims": viewer.claims]]
        if let number { request["number"] = ["client": .string(number.client), "seq": .int(number.seq)] }
        return JSON.object(request).encoded()
    }

    static func parseRequest(_ bytes: [UInt8]) -> (name: String, args: JSON?, number: ActionNumber?, viewer: Viewer)? {
        guard let json = try? JSONParser().parse(bytes), let name = json["name"]?.stringValue else { return nil }
        let args = json["args"]
        let viewer = json["viewer"].flatMap { viewer in
            viewer["id"]?.stringValue.map { Viewer(id: $0, claims: viewer["claims"] ?? .object([:])) }
        }
        let number = json["number"].flatMap { number in
            number["client"]?.stringValue.flatMap { client in number["seq"]?.intValue.map { ActionNumber(client: client, seq: $0) } }
        }
        return (name, args == .null ? nil : args, number, viewer ?? .unidentified)
    }

    static func reply(_ outcome: ActionOutcome) -> [UInt8] {
        switch outcome {
        case .applied(let version): return JSON.object(["version": .int(version)]).encoded()
        case .failed(let error):
            var members: [String: JSON] = ["code": .string(error.code.rawValue), "message": .string(error.message), "applied": error.applied.json]
            members["reason"] = error.reason.map(JSON.string)
            return JSON.object(members).encoded()
        }
    }

    static func parseReply(_ bytes: [UInt8]) -> ActionOutcome {
        guard let json = try? JSONParser().parse(bytes) else {
            return .failed(ProtocolError(.internal, "the room's owner answered something unreadable", applied: .unknown))
        }
        if let version = json["version"]?.intValue { return .applied(version: version) }
        let code = json["code"]?.stringValue.flatMap(ErrorCode.init(rawValue:)) ?? .internal
        return .failed(ProtocolError(code, json["message"]?.stringValue ?? "failed", applied: ProtocolError.Applied(json: json["applied"]),
                                     reason: json["reason"]?.stringValue))
    }
}
