import Foundation
import Synchronization
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
    /// must not hold a delivery longer than its whole timeout. The deadline is a Dispatch timer
    /// (not a task on the cooperative pool, which busy callers can hold up), and the caller is
    /// answered at the deadline without waiting for the exchange to notice its cancellation.
    private func withDeadline<T: Sendable>(_ seconds: Double, _ work: @escaping @Sendable () async throws -> T) async throws -> T {
        let race = DeadlineRace<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation, work: work)
                DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { race.finish(.failure(OutboundError.timedOut)) }
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }
}

/// The first of the exchange, the deadline and the caller's cancellation answers; the exchange
/// is cancelled when it is not the first.
private final class DeadlineRace<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        /// The first answer, kept until the caller's continuation is there to take it.
        var answer: Result<T, any Error>?
        var work: Task<Void, Never>?
    }

    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<T, any Error>, work: @escaping @Sendable () async throws -> T) {
        let early = state.withLock { state -> Result<T, any Error>? in
            if let answer = state.answer { return answer }
            state.continuation = continuation
            return nil
        }
        if let early { return continuation.resume(with: early) }
        let task = Task {
            do { finish(.success(try await work())) } catch { finish(.failure(error)) }
        }
        state.withLock { $0.work = task }
    }

    /// The first call answers; later ones do nothing.
    func finish(_ result: Result<T, any Error>) {
        let (continuation, work) = state.withLock { state -> (CheckedContinuation<T, any Error>?, Task<Void, Never>?) in
            guard state.answer == nil else { return (nil, nil) }
            state.answer = result
            defer { state.continuation = nil }
            return (state.continuation, state.work)
        }
        // The exchange is left to end by itself (libcurl's own timeout), not cancelled:
        // cancelling swift-corelibs-foundation's async `data(for:)` while it completes deadlocks
        // in URLSessionTask.cancel (seen: a webhook deliverer stuck after its second timeout).
        _ = work
        continuation?.resume(with: result)
    }
}

private final class RefuseRedirects: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}
