import TetherBinding
import TetherContract
import TetherDemoContracts
import TetherState

/// The seeds' sign-in form, per session: every connection gets its own private instance.
/// The password itself never enters the state; only its length does.
///
/// The rule, shown before any press: Sign in is enabled only for an e-mail address (one `@`,
/// text before it, a domain with a dot inside after it, no spaces) and a password of at least 6
/// characters. While a typed field breaks it, `errorMessage` says how (the seeds' Korean message
/// for the password).
public final class Login: ViewModel, LoginContract.Implementation {
    public static let shortPasswordMessage = "6자리 이상 비밀번호를 입력해주세요."
    public static let minimumPasswordLength = 6
    public static let emailMessage = "Enter an e-mail address such as name@example.com."

    public let email = Observable("")
    let password = Observable("")
    public let signedIn = Observable(false)
    public let passwordLength: ReadOnlyObservable<Int>
    public let errorMessage: ReadOnlyObservable<String?>
    public let signInEnabled: ReadOnlyObservable<Bool>

    public init(context: ViewModelContext) {
        passwordLength = password.map(\.count).removeDuplicates()
        errorMessage = combineLatest(email, password).map { Self.problem(email: $0, passwordLength: $1.count) }.removeDuplicates()
        signInEnabled = combineLatest(email, password)
            .map { Self.isEmailAddress($0) && $1.count >= Self.minimumPasswordLength }
            .removeDuplicates()
    }

    public static func isEmailAddress(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !text.contains(where: \.isWhitespace) else { return false }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2 && labels.allSatisfy { !$0.isEmpty }
    }

    /// What is wrong with what was typed so far; an empty field is not wrong yet.
    public static func problem(email: String, passwordLength: Int) -> String? {
        if !email.isEmpty && !isEmailAddress(email) { return emailMessage }
        if passwordLength > 0 && passwordLength < minimumPasswordLength { return shortPasswordMessage }
        return nil
    }

    public static let actions = ActionTable(LoginContract.binding(Login.self))

    public func setEmail(value: String) { email.value = value }

    public func setPassword(value: String) { password.value = value }

    public func signIn() throws {
        guard signInEnabled.value else { throw LoginContract.Failure.notSignable }
        signedIn.value = true
    }

    public func signOut() {
        signedIn.value = false
        email.value = ""
        password.value = ""
    }
}
