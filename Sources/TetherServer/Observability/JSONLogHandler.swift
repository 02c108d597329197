import Foundation
import Logging
import Synchronization
import TetherJSON

/// Writes each log record as one JSON object on one line of stderr, for log collectors:
/// `{"time":"2026-11-23T09:00:00.123Z","level":"notice","label":"tetherd","source":"TetherServer","message":"..."}`
/// plus the record's metadata as further members.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    private let label: String

    /// One write per line, so lines from several threads never interleave.
    private static let output = Mutex(())

    public init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var object: [String: JSON] = [
            "time": .string(Self.timestamp()), "level": .string(event.level.rawValue), "label": .string(label),
            "source": .string(event.source), "message": .string(event.message.description),
        ]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { _, new in new }) where object[key] == nil {
            object[key] = .string(value.description)
        }
        var line = JSON.object(object).encoded()
        line.append(UInt8(ascii: "\n"))
        Self.output.withLock { _ in
            line.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                    if written <= 0 { break }
                    offset += written
                }
            }
        }
    }

    private static func timestamp() -> String {
        Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
