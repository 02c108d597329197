import TetherContract
import TetherContractMacro

/// The seeds' sign-in form, one per session. The password never enters the state; its length does.
@Contract("login")
public enum LoginContract {
    public struct State: Codable, Sendable, Equatable {
        public var email: String = ""
        public var signedIn: Bool = false
        public var passwordLength: Int = 0
        /// How what was typed breaks the rule; nil while nothing does.
        public var errorMessage: String? = nil
        public var signInEnabled: Bool = false
        public init() {}
    }
    public enum Failure: String, ContractFailure {
        case notSignable
        public var message: String {
            "sign-in needs an e-mail address (name@example.com) and a password of at least 6 characters"
        }
    }
    public protocol Actions {
        func setEmail(value: String)
        func setPassword(value: String)
        func signIn() throws
        func signOut()
    }
}
