import TetherTransport

/// One file of `Clients/web` built into the daemon (WebAssets.swift, generated at build time by
/// Scripts/embed-web.sh through Plugins/EmbedWeb).
struct WebAsset: Sendable {
    /// Where it comes from in the repository.
    let source: String
    let contentType: String
    let text: String
}

/// The browser files tetherd serves: the dashboard at `/`, `/tether.js`, `/examples/…`. They
/// are compiled into the binary, so a daemon installed alone (the Debian package) serves them.
enum WebAssets {
    /// The page may load script, style and connections from the daemon itself only: no inline
    /// script or style, no other site, and no framing by another page.
    static let contentSecurityPolicy = "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; "
        + "style-src 'self'; script-src 'self'; base-uri 'none'; frame-ancestors 'none'"

    /// Every file's response, made once.
    private static let responses: [String: HTTPResponse] = files.mapValues { asset in
        HTTPResponse(status: 200, contentType: asset.contentType, body: Array(asset.text.utf8), headers: [
            "Content-Security-Policy": contentSecurityPolicy,
            "X-Content-Type-Options": "nosniff",
            // The files change only with the binary; revalidating each time keeps an upgraded
            // daemon from serving a page mixed of old and new scripts.
            "Cache-Control": "no-cache",
        ])
    }

    /// The file served at `path`, or nil.
    static func response(for path: String) -> HTTPResponse? {
        responses[path]
    }
}
