import TetherContract
import TetherContractMacro

/// `{"time": "HH:mm:ss"}` in the server's local time, kept current by the server.
@Contract("clock")
public enum ClockContract {
    public struct State: Codable, Sendable, Equatable {
        public var time: String = ""
        public init() {}
    }
    public protocol Actions {}
}
