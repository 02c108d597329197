/// Which web pages may open a WebSocket to the server, judged by the `Origin` header browsers
/// send with every upgrade. A page of another site must not be able to use a visitor's access
/// to the server (a daemon on their loopback address, a token in their session): by default only
/// the server's own origin — a page it served itself — gets through.
///
/// Requests without an `Origin` come from programs, not browsers (the Swift client, `tether`,
/// scripts); browsers cannot leave the header out, so those are not a page's doing and pass.
public struct OriginPolicy: Sendable, Equatable {
    /// Origins allowed besides the server's own, canonical (`https://app.example.com`,
    /// `http://localhost:3000`).
    public private(set) var allowed: Set<String>
    /// `*`: every origin (any page on any site can connect with its visitors' access).
    public private(set) var allowsAny: Bool

    /// The server's own origin only.
    public static let ownOriginOnly = OriginPolicy(allowed: [], allowsAny: false)

    private init(allowed: Set<String>, allowsAny: Bool) {
        self.allowed = allowed
        self.allowsAny = allowsAny
    }

    /// `origins`: `scheme://host[:port]` (http or https, no path) or `*`. Throws a one-line
    /// reason naming the first entry that is neither.
    public init(allowing origins: [String]) throws(OriginPolicyError) {
        var allowed: Set<String> = []
        var any = false
        for entry in origins.map({ $0.trimmingWhitespace() }) where !entry.isEmpty {
            if entry == "*" {
                any = true
            } else if let origin = WebOrigin(entry) {
                allowed.insert(origin.canonical)
            } else {
                throw OriginPolicyError(entry: entry)
            }
        }
        self.init(allowed: allowed, allowsAny: any)
    }

    /// Whether an upgrade carrying `origin` (nil: no header) may proceed, on a server reached as
    /// `host` (the request's `Host` header).
    public func allows(origin: String?, host: String?) -> Bool {
        guard let origin else { return true }
        if allowsAny { return true }
        guard let parsed = WebOrigin(origin) else { return false }  // "null", file:, garbage
        if allowed.contains(parsed.canonical) { return true }
        guard let host, let requested = WebOrigin(scheme: parsed.scheme, authority: host) else { return false }
        return requested.canonical == parsed.canonical
    }

    /// The entries as given to `init(allowing:)`, canonical and sorted (for logs and settings).
    public var entries: [String] { (allowsAny ? ["*"] : []) + allowed.sorted() }
}

public struct OriginPolicyError: Error, Equatable, CustomStringConvertible {
    public let entry: String
    public var description: String {
        "\"\(entry)\" is not an origin: write scheme://host[:port] with http or https and no path (https://app.example.com), or *"
    }
}

/// A web origin: scheme, host and port, compared the way browsers compare them (scheme and host
/// case-insensitive, the scheme's default port left out).
struct WebOrigin: Equatable {
    let scheme: String
    let host: String
    let port: Int?

    /// Parses `scheme://host[:port]` (an optional trailing `/` allowed); http and https only.
    init?(_ text: String) {
        guard let separator = text.firstRange(of: "://") else { return nil }
        var authority = String(text[separator.upperBound...])
        if authority.hasSuffix("/") { authority.removeLast() }
        self.init(scheme: String(text[..<separator.lowerBound]), authority: authority)
    }

    /// `authority` is `host[:port]` as a `Host` header carries it (`[::1]:8080` for IPv6).
    init?(scheme: String, authority: String) {
        let scheme = scheme.lowercased()
        guard scheme == "http" || scheme == "https", !authority.isEmpty,
              !authority.contains(where: { "/?#@ \t".contains($0) }) else { return nil }
        var host = Substring(authority)
        var port: Int?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let rest = host[host.index(after: close)...]
            host = host[...close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let number = Int(rest.dropFirst()) else { return nil }
                port = number
            }
        } else if let colon = host.lastIndex(of: ":") {
            guard let number = Int(host[host.index(after: colon)...]) else { return nil }
            port = number
            host = host[..<colon]
        }
        if let given = port {
            guard (1...65_535).contains(given) else { return nil }
            if given == (scheme == "https" ? 443 : 80) { port = nil }
        }
        guard !host.isEmpty else { return nil }
        self.scheme = scheme
        self.host = host.lowercased()
        self.port = port
    }

    var canonical: String { "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "") }
}

extension String {
    func trimmingWhitespace() -> String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
