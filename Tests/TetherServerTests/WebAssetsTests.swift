import Testing
@testable import TetherServer
import TetherTransport

/// The browser files compiled into the daemon (WebAssets.swift, written at build time by
/// Scripts/embed-web.sh through Plugins/EmbedWeb): their paths and the headers they go out with.
@Suite("Web assets")
struct WebAssetsTests {
    @Test func pathsAndContentTypes() throws {
        let expected = [
            "/": ("Clients/web/dashboard/index.html", "text/html; charset=utf-8"),
            "/dashboard.js": ("Clients/web/dashboard/dashboard.js", "text/javascript; charset=utf-8"),
            "/dashboard.css": ("Clients/web/dashboard/dashboard.css", "text/css; charset=utf-8"),
            "/tether.js": ("Clients/web/tether.js", "text/javascript; charset=utf-8"),
            "/tether.d.ts": ("Clients/web/tether.d.ts", "text/plain; charset=utf-8"),
            "/examples/counter.html": ("Clients/web/examples/counter.html", "text/html; charset=utf-8"),
            // What counter.js is type-checked with, beside it as in the repository (CodegenTests).
            "/examples/tether-types.d.ts": ("Clients/web/examples/tether-types.d.ts", "text/plain; charset=utf-8"),
            "/examples/tsconfig.json": ("Clients/web/examples/tsconfig.json", "application/json"),
        ]
        for (path, (source, type)) in expected {
            let asset = try #require(WebAssets.files[path], "\(path)")
            #expect(asset.source == source && asset.contentType == type)
        }
        #expect(WebAssets.files["/index.html"] == nil, "the dashboard's page is served at / only")
    }

    @Test func everyFileCarriesThePolicyAndNosniff() throws {
        for path in WebAssets.files.keys {
            let response = try #require(WebAssets.response(for: path))
            #expect(response.status == 200)
            #expect(response.headers["X-Content-Type-Options"] == "nosniff")
            let policy = try #require(response.headers["Content-Security-Policy"])
            #expect(policy.contains("script-src 'self'") && policy.contains("style-src 'self'") && policy.contains("frame-ancestors 'none'"))
            #expect(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"))
        }
        #expect(WebAssets.response(for: "/no-such-file.js") == nil)
        #expect(WebAssets.response(for: "/../Package.swift") == nil)
    }

    @Test func allowedOriginsIsReadAndChecked() throws {
        let loader = ConfigurationLoader()
        let configuration = try loader.load(arguments: ["--allowed-origins", "https://App.example.com, http://localhost:3000/"], environment: [:]).configuration
        #expect(configuration.allowedOrigins.entries == ["http://localhost:3000", "https://app.example.com"])
        #expect(configuration.transportConfiguration.allowedOrigins == configuration.allowedOrigins)
        #expect(try loader.load(arguments: [], environment: [:]).configuration.allowedOrigins == .ownOriginOnly)
        #expect(throws: ConfigurationError.self) {
            try loader.load(arguments: ["--allowed-origins", "app.example.com"], environment: [:])
        }
        #expect(ServerConfiguration.options.first { $0.key == "allowed-origins" }?.isReloadable == false,
                "the transport reads it when it starts")
    }
}
