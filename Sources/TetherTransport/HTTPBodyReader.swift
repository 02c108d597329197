/// Reads one HTTP request's body, bounded: the decisions of lws' body callbacks as a value type
/// (events in, an action out), so that the limits are tested by tables, not by sockets.
///
/// - `Content-Length` over the bound is refused at once (413), before a byte is read.
/// - Without `Content-Length` there is no body (HTTP/1.1; a chunked one is refused before,
///   since lws 4.1 hands it to no callback).
/// - A body that ends before its declared length is a bad request (400).
struct HTTPBodyReader: Equatable {
    enum Action: Equatable {
        /// Keep reading.
        case wait
        /// The body is whole: hand the request on with it.
        case dispatch([UInt8])
        /// Answer `status` with `reason` and read no more.
        case refuse(status: Int, reason: String)
    }

    let maxBytes: Int
    /// The declared length.
    let declaredLength: Int
    private(set) var body: [UInt8] = []
    private(set) var isDone = false

    /// The reader for a request whose headers declare `contentLength` (nil: none), and the
    /// action to take before any byte: `.refuse` when the declared length is over the bound.
    static func start(contentLength: String?, maxBytes: Int) -> (HTTPBodyReader, Action) {
        // HTTP/1.1 without a length (and not chunked, refused earlier): no body at all.
        guard let contentLength else {
            var reader = HTTPBodyReader(maxBytes: maxBytes, declaredLength: 0)
            reader.isDone = true
            return (reader, .dispatch([]))
        }
        guard let length = Int(contentLength), length >= 0 else {
            var reader = HTTPBodyReader(maxBytes: maxBytes, declaredLength: 0)
            reader.isDone = true
            return (reader, .refuse(status: 400, reason: "Content-Length is not a number"))
        }
        var reader = HTTPBodyReader(maxBytes: maxBytes, declaredLength: length)
        guard length <= maxBytes else {
            reader.isDone = true
            return (reader, tooLarge(maxBytes))
        }
        if length == 0 {
            reader.isDone = true
            return (reader, .dispatch([]))
        }
        return (reader, .wait)
    }

    /// Bytes of the body arrived (`LWS_CALLBACK_HTTP_BODY`).
    mutating func received(_ bytes: some Collection<UInt8>) -> Action {
        guard !isDone else { return .wait }
        guard body.count + bytes.count <= min(maxBytes, declaredLength) else {
            isDone = true
            return .refuse(status: 400, reason: "the body is longer than its Content-Length")
        }
        body.append(contentsOf: bytes)
        return .wait
    }

    /// The peer says the body is complete (`LWS_CALLBACK_HTTP_BODY_COMPLETION`).
    mutating func completed() -> Action {
        guard !isDone else { return .wait }
        isDone = true
        if body.count != declaredLength {
            return .refuse(status: 400, reason: "the body ended after \(body.count) of its \(declaredLength) bytes")
        }
        return .dispatch(body)
    }

    private static func tooLarge(_ maxBytes: Int) -> Action {
        .refuse(status: 413, reason: "a request body holds at most \(maxBytes) bytes")
    }
}
