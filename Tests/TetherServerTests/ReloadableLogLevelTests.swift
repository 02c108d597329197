import Logging
import Synchronization
import Testing
import TetherServer

/// Log handlers whose level a reload changes.
@Suite("Reloadable log level")
struct ReloadableLogLevelTests {
    final class Recorder: LogHandler, @unchecked Sendable {
        let lines = Mutex<[String]>([])
        var logLevel: Logger.Level = .critical  // ignored: the wrapper filters
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { lines.withLock { $0.append("\(event.level) \(event.message)") } }
    }

    @Test func aLoggerMadeBeforeTheChangeFollowsIt() {
        let level = ReloadableLogLevel(.warning)
        let recorder = Recorder()
        let logger = Logger(label: "test") { _ in level.handler(recorder) }
        logger.info("hidden")
        logger.warning("shown")
        level.current = .debug
        logger.debug("now shown")
        level.current = .error
        logger.warning("hidden again")
        #expect(recorder.lines.withLock { $0 } == ["warning shown", "debug now shown"])
    }
}
