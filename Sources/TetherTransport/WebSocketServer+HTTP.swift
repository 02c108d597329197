import CLibWebSockets

/// An HTTP connection handed to another thread only to come back to the loop with an answer.
struct HTTPConnection: @unchecked Sendable {
    let wsi: OpaquePointer
}

/// Plain HTTP on the WebSocket port: the request handed to the delegate, its answer written
/// now or later (from any thread, through `HTTPResponder`).
extension ServerLoop {
    /// What the transport serves; other methods are answered 405 with this.
    static let allowedMethods = "GET, HEAD, POST, DELETE, OPTIONS"

    func serveHTTP(_ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?, _ len: Int) -> Int32 {
        let isHead = lws_hdr_total_length(wsi, WSI_TOKEN_HEAD_URI) > 0
        // A HEAD is the GET of the same path, answered without its body.
        let method = lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0 || isHead ? "GET"
            : lws_hdr_total_length(wsi, WSI_TOKEN_DELETE_URI) > 0 ? "DELETE"
            : lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) > 0 ? "POST" : nil
        if isHead { headRequests.insert(wsi) }
        if phase == .running, lws_hdr_total_length(wsi, WSI_TOKEN_OPTIONS_URI) > 0 {
            let path = input.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: max(0, len)), as: UTF8.self) } ?? "/"
            let allow = delegate?.allowedMethods(forPath: path) ?? Self.allowedMethods
            return finishHTTP(wsi, HTTPResponse(status: 200, body: [], headers: ["Allow": allow]))
        }
        guard phase == .running, let method, delegate != nil else {
            let refusal = phase != .running ? HTTPResponse(status: 503, text: "shutting down\n")
                : HTTPResponse(status: 405, text: "method not allowed\n", headers: ["Allow": Self.allowedMethods])
            return finishHTTP(wsi, refusal)
        }
        // A browser asks before it sends a page's DELETE to another site (a preflight OPTIONS,
        // refused here); the Origin check of upgrades refuses such a page all the same.
        if method != "GET", !configuration.allowedOrigins.allows(origin: header(wsi, WSI_TOKEN_ORIGIN), host: header(wsi, WSI_TOKEN_HOST)) {
            return finishHTTP(wsi, HTTPResponse(status: 403, text: "pages of other origins may not change anything here (tetherd --allowed-origins)\n"))
        }
        let path = input.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: max(0, len)), as: UTF8.self) } ?? "/"
        let request = HTTPRequest(method: method, path: path, authorization: header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION),
                                  query: query(wsi), headers: readHeaders(wsi), remoteAddress: peerAddress(wsi))
        guard method == "POST" else { return dispatch(wsi, request) }
        // lws 4.1 hands a chunked request body to no callback (measured): ask for a length.
        if let encoding = header(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING), encoding.lowercased().contains("chunked") {
            _ = writeHTTP(wsi, HTTPResponse(status: 411, text: "send the body with a Content-Length, not in chunks\n", headers: ["Connection": "close"]))
            return -1
        }
        let (reader, first) = HTTPBodyReader.start(contentLength: header(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH), maxBytes: configuration.maxHTTPBodyBytes)
        pendingBodies[wsi] = (reader, request)
        return readingBody(wsi, first)
    }

    /// Bytes of a POST's body (`LWS_CALLBACK_HTTP_BODY`).
    func bodyArrived(_ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?, _ len: Int) -> Int32 {
        guard pendingBodies[wsi] != nil else { return 0 }
        let bytes = input.map { UnsafeRawBufferPointer(start: $0, count: max(0, len)) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
        let action = pendingBodies[wsi]!.reader.received(bytes)
        return readingBody(wsi, action)
    }

    /// The end of a POST's body (`LWS_CALLBACK_HTTP_BODY_COMPLETION`).
    func bodyCompleted(_ wsi: OpaquePointer) -> Int32 {
        guard pendingBodies[wsi] != nil else { return 0 }
        let action = pendingBodies[wsi]!.reader.completed()
        return readingBody(wsi, action)
    }

    /// What the body reader decided: read on, hand the request on with its body, or refuse.
    private func readingBody(_ wsi: OpaquePointer, _ action: HTTPBodyReader.Action) -> Int32 {
        switch action {
        case .wait:
            return 0
        case .dispatch(let body):
            guard var request = pendingBodies.removeValue(forKey: wsi)?.request else { return 0 }
            request.body = body
            return dispatch(wsi, request)
        case .refuse(let status, let reason):
            pendingBodies[wsi] = nil
            // The rest of the body is not read: the answer is the last thing on this connection.
            _ = writeHTTP(wsi, HTTPResponse(status: status, text: reason + "\n", headers: ["Connection": "close"]))
            return -1
        }
    }

    /// Hands a whole request to the delegate; its answer is written now or later.
    private func dispatch(_ wsi: OpaquePointer, _ request: HTTPRequest) -> Int32 {
        guard let delegate else { return finishHTTP(wsi, HTTPResponse(status: 503, text: "shutting down\n")) }
        httpRequestCount += 1
        let id = httpRequestCount
        pendingHTTP[wsi] = (id, nil)
        let connection = HTTPConnection(wsi: wsi)
        answeringNow = wsi
        let responder = HTTPResponder({ [self] response in answer(connection, id: id, with: response) },
                                      stream: { [self] head in startStream(connection, id: id, head: head) })
        delegate.httpRequest(request, responder: responder)
        answeringNow = nil
        if let response = pendingHTTP[wsi]?.response {
            pendingHTTP[wsi] = nil
            return finishHTTP(wsi, response)
        }
        if streams[wsi] != nil { lws_callback_on_writable(wsi) }
        return 0  // answered later, in LWS_CALLBACK_HTTP_WRITEABLE
    }

    /// Keeps `response` for its request, if that is still waiting, and asks for the writable
    /// callback that sends it (unless the delegate answered within its call). Any thread.
    func answer(_ connection: HTTPConnection, id: Int, with response: HTTPResponse) {
        guard isOnLoopThread else {
            execute { self.answer(connection, id: id, with: response) }
            return
        }
        let wsi = connection.wsi
        guard pendingHTTP[wsi]?.id == id, pendingHTTP[wsi]?.response == nil else { return }
        pendingHTTP[wsi]?.response = response
        if answeringNow != wsi { lws_callback_on_writable(wsi) }
    }

    /// Writes a whole answer and closes the connection once it is sent: one request per
    /// connection. lws 4.1 reads a request that arrives pipelined behind another wrongly when it
    /// has a body (measured: its request line handed over as the body, then a socket thread
    /// spinning at 100 %), so no request is ever read from behind another.
    func finishHTTP(_ wsi: OpaquePointer, _ response: HTTPResponse) -> Int32 {
        var response = response
        response.headers["Connection"] = "close"
        guard writeHTTP(wsi, response, body: headRequests.remove(wsi) == nil) else { return -1 }
        return closeWhenSent(wsi)
    }

    /// -1 (close now) once lws holds nothing of the last write; else closes after it is sent.
    func closeWhenSent(_ wsi: OpaquePointer) -> Int32 {
        guard lws_partial_buffered(wsi) != 0 else { return -1 }
        closingHTTP.insert(wsi)
        lws_callback_on_writable(wsi)
        return 0
    }

    /// A request header's value (repeated headers joined by commas), or nil when absent.
    func header(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
        let length = Int(lws_hdr_total_length(wsi, token))
        guard length > 0 else { return nil }
        // lws_hdr_copy adds a comma between repeated headers, not counted in the total length.
        let capacity = length * 2 + 2
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: capacity) { buffer -> String? in
            guard let base = buffer.baseAddress, lws_hdr_copy(wsi, base, Int32(capacity), token) >= 0 else { return nil }
            return String(cString: base)
        }
    }

    /// Writes the status line, headers and body; false when lws refused them. Without
    /// `declaresLength` a streamed body follows, of no declared length.
    func writeHTTP(_ wsi: OpaquePointer, _ response: HTTPResponse, body includesBody: Bool = true,
                   declaresLength: Bool = true) -> Bool {
        // lws' LWS_ILLEGAL_HTTP_CONTENT_LEN ((lws_filepos_t)-1) leaves Content-Length out.
        let length = declaresLength ? lws_filepos_t(response.body.count) : lws_filepos_t.max
        let headerSpace = 4096
        let pre = Int(TETHER_LWS_PRE)
        let headersOK = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: pre + headerSpace) { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            let start = base + pre
            let end = start + headerSpace
            var cursor: UnsafeMutablePointer<UInt8>? = start
            let status = UInt32(clamping: (100...599).contains(response.status) ? response.status : 500)
            let added = response.contentType.withCString { type in
                lws_add_http_common_headers(wsi, status, type, length, &cursor, end)
            }
            if added != 0 { return false }
            for (name, value) in response.headers.sorted(by: { $0.key < $1.key }) {
                let nameBytes = Array("\(name):".utf8) + [0]  // lws writes the name as given, colon included
                let valueBytes = Array(value.utf8) + [0]
                let failed = nameBytes.withUnsafeBufferPointer { name in
                    valueBytes.withUnsafeBufferPointer { value in
                        lws_add_http_header_by_name(wsi, name.baseAddress, value.baseAddress, Int32(value.count - 1), &cursor, end)
                    }
                }
                if failed != 0 { return false }
            }
            return lws_finalize_write_http_header(wsi, start, &cursor, end) == 0
        }
        guard headersOK else { return false }
        if includesBody, !response.body.isEmpty {
            let destination = scratchPayload(capacity: response.body.count)
            response.body.withUnsafeBytes { body in
                if let source = body.baseAddress {
                    UnsafeMutableRawPointer(destination).copyMemory(from: source, byteCount: body.count)
                }
            }
            let written = lws_write(wsi, destination, response.body.count, LWS_WRITE_HTTP_FINAL)
            if written < 0 || Int(written) < response.body.count { return false }
        }
        return true
    }

    /// The query string's arguments (lws keeps each as a fragment of `URI_ARGS`), joined by `&`.
    private func query(_ wsi: OpaquePointer) -> String? {
        let total = Int(lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS))
        guard total > 0 else { return nil }
        var arguments: [String] = []
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: total + 1) { buffer in
            guard let base = buffer.baseAddress else { return }
            var index: Int32 = 0
            while lws_hdr_copy_fragment(wsi, base, Int32(total + 1), WSI_TOKEN_HTTP_URI_ARGS, index) > 0 {
                arguments.append(String(cString: base))
                index += 1
            }
        }
        return arguments.joined(separator: "&")
    }

    /// The allow-listed headers present: lws parses the common ones into tokens and keeps the
    /// others by name (custom headers, named with their colon).
    private func readHeaders(_ wsi: OpaquePointer) -> [String: String] {
        let tokens: [String: lws_token_indexes] = ["content-type": WSI_TOKEN_HTTP_CONTENT_TYPE, "accept": WSI_TOKEN_HTTP_ACCEPT,
                                                   "if-none-match": WSI_TOKEN_HTTP_IF_NONE_MATCH]
        var headers: [String: String] = [:]
        for name in HTTPRequest.readHeaders {
            if let token = tokens[name] {
                headers[name] = header(wsi, token)
            } else {
                headers[name] = customHeader(wsi, name)
            }
        }
        return headers
    }

    private func customHeader(_ wsi: OpaquePointer, _ name: String) -> String? {
        let key = name + ":"
        let length = Int(lws_hdr_custom_length(wsi, key, Int32(key.utf8.count)))
        guard length >= 0 else { return nil }
        guard length > 0 else { return "" }  // sent empty: present, and refused as such
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: length + 1) { buffer -> String? in
            guard let base = buffer.baseAddress, lws_hdr_custom_copy(wsi, base, Int32(length + 1), key, Int32(key.utf8.count)) >= 0 else { return nil }
            return String(cString: base)
        }
    }
}
