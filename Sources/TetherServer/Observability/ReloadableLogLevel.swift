import Logging
import Synchronization

/// A log level that can change while the process runs. swift-log fixes a handler's level when
/// a `Logger` is made (and the logging system is bootstrapped once), so the handlers `tetherd`
/// bootstraps read their level from here, and a reload sets it.
public final class ReloadableLogLevel: Sendable {
    private let level: Mutex<Logger.Level>

    public init(_ level: Logger.Level) {
        self.level = Mutex(level)
    }

    public var current: Logger.Level {
        get { level.withLock { $0 } }
        set { level.withLock { $0 = newValue } }
    }

    /// `handler` (text or JSON), filtered by this level.
    public func handler(_ handler: some LogHandler) -> some LogHandler {
        LevelFollowingLogHandler(inner: handler, level: self)
    }
}

/// Forwards to `inner`, at the shared level unless this copy's level was set explicitly.
private struct LevelFollowingLogHandler<Inner: LogHandler>: LogHandler {
    var inner: Inner
    let level: ReloadableLogLevel
    private var ownLevel: Logger.Level?

    init(inner: Inner, level: ReloadableLogLevel) {
        var inner = inner
        inner.logLevel = .trace  // the filtering happens here
        self.inner = inner
        self.level = level
    }

    var logLevel: Logger.Level {
        get { ownLevel ?? level.current }
        set { ownLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        inner.log(event: event)
    }
}
