import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An HTTP request tetherd sends on its own: a JWKS fetch, a webhook delivery.
public struct OutboundRequest: Sendable {
    public var method: String
    public var url: URL
    /// Names as written; `Content-Length` is set from the body.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The whole exchange, connect included.
    public var timeout: Duration

    public init(method: String = "GET", url: URL, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
                timeout: Duration = .seconds(15)) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

public struct OutboundResponse: Sendable, Equatable {
    public var status: Int
    /// Header names lowercased.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Why no response came back. A response with any status (a 3xx included: redirects are never
/// followed) is not an error.
public enum OutboundError: Error, Sendable, Equatable, CustomStringConvertible {
    case timedOut
    case unreachable(String)
    case responseTooLarge(limit: Int)

    public var description: String {
        switch self {
        case .timedOut: "timed out"
        case .unreachable(let why): why
        case .responseTooLarge(let limit): "response over \(limit) bytes"
        }
    }
}

/// The one way tetherd speaks HTTP to others, so tests can stand in for the network and callers
/// never see the client library's types.
public protocol OutboundHTTP: Sendable {
    func send(_ request: OutboundRequest) async throws(OutboundError) -> OutboundResponse
}

/// FoundationNetworking's `URLSession` (libcurl), already linked for the NATS durability check:
/// no new dependency to build (docs/DESIGN.md, "Outbound HTTP"). Ephemeral: no cookies, no
/// cache, no credentials kept; redirects answered as they are.
public final class URLSessionOutboundHTTP: OutboundHTTP {
    private let session: URLSession
    private let maxResponseBytes: Int

    public init(maxResponseBytes: Int = 1 << 20) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration, delegate: RefuseRedirects(), delegateQueue: nil)
        self.maxResponseBytes = maxResponseBytes
    }

    deinit { session.invalidateAndCancel() }

    public func send(_ request: OutboundRequest) async throws(OutboundError) -> OutboundResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        let seconds = Double(request.timeout.components.seconds) + Double(request.timeout.components.attoseconds) / 1e18
        urlRequest.timeoutInterval = seconds
        for header in request.headers { urlRequest.addValue(header.value, forHTTPHeaderField: header.name) }
        if !request.body.isEmpty || request.method == "POST" { urlRequest.httpBody = Data(request.body) }
        let data: Data
        let response: URLResponse
        let prepared = urlRequest
        do {
            (data, response) = try await withDeadline(seconds) { [session] in try await session.data(for: prepared) }
        } catch let error as OutboundError {
            throw error
        } catch let error as URLError where error.code == .timedOut {
            throw .timedOut
        } catch {
            throw .unreachable(error.localizedDescription)
        }
        guard let http = response as? HTTPURLResponse else { throw .unreachable("not an HTTP response") }
        guard data.count <= maxResponseBytes else { throw .responseTooLarge(limit: maxResponseBytes) }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return OutboundResponse(status: http.statusCode, headers: headers, body: Array(data))
    }

    /// `timeoutInterval` is an idle timeout in libcurl's hands; a receiver that trickles bytes
    /// must not hold a delivery longer than its whole timeout.
    private func withDeadline<T: Sendable>(_ seconds: Double, _ work: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await work() }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                throw OutboundError.timedOut
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }
}

private final class RefuseRedirects: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}
