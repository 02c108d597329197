import TetherContract
import TetherContractMacro

/// Three people in turn: `name` and `picture` follow `index`.
@Contract("gallery")
public enum GalleryContract {
    public struct State: Codable, Sendable, Equatable {
        public var index: Int = 0
        public var count: Int = 3
        public var name: String = ""
        public var picture: String = ""
        public init() {}
    }
    public protocol Actions {
        func next()
        func previous()
    }
}
