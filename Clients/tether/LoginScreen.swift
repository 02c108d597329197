import TetherBinding
import TetherClient
import TetherDemoContracts
import TetherTUI

/// `login` (per session): email and password fields that send every edit, a sign-in button
/// enabled by the server's `signInEnabled`, its error message, and the signed-in view with a
/// sign-out button. The password text stays in the field; the server learns it only through
/// `setPassword`.
@MainActor
final class LoginScreen: Screen {
    let body: Widget

    init(_ context: ScreenContext) {
        let login = context.room(LoginContract.self)
        let email = TextField(placeholder: "you@example.com")
        let password = TextField(placeholder: "at least 6 characters", isMasked: true)
        let signIn = Button("Sign in", isEnabled: false)
        let error = Label("", style: Style(fg: .red, bold: true), wraps: true)
        let form = Stack(.vertical, [
            Box(title: "Email", email), Box(title: "Password", password), Stack.row([signIn]), Label(), error,
        ])
        let welcome = Label("", style: Style(fg: .green, bold: true), alignment: .center)
        let signOut = Button("Sign out").onPress(context.action(login.signOut))
        let signedIn = Stack(.vertical, spacing: 1, [
            Spacer(.vertical), welcome, Label("(signed in on the server)", alignment: .center), Stack.centeredRow([signOut]), Spacer(.vertical),
        ])

        // Predicted, so the button enables as the fields fill: a burst of typing, Tab and Enter
        // (a paste, a fast typist far from the server) signs in without waiting for the server.
        context.sendEdits(of: email, to: login.setEmail, { .init(value: $0) }, predict: Self.predictEmail)
        context.sendEdits(of: password, to: login.setPassword, { .init(value: $0) }, predict: Self.predictPassword)
        signIn.onPress(context.action(login.signIn))

        context.bind(LoginContract.Fields.signInEnabled, default: false) { enabled in
            signIn.isEnabled = enabled
            signIn.title = enabled ? "Sign in" : "Sign in (disabled)"  // visible without colors too
        }
        context.bind(context.value(LoginContract.Fields.errorMessage)) { message in
            error.text = message.map { message in Self.english[message].map { "\($0)\n\(message)" } ?? message } ?? ""
        }
        var wasSignedIn = false
        let account = combineLatest(context.value(LoginContract.Fields.signedIn, default: false), context.value(LoginContract.Fields.email, default: ""))
        context.bind(account) { isSignedIn, address in
            form.isHidden = isSignedIn
            signedIn.isHidden = !isSignedIn
            welcome.text = "Signed in as \(address)"
            if wasSignedIn && !isSignedIn {
                // Signed out: the server forgot the email and password, so does the form.
                email.text = ""
                password.text = ""
            }
            wasSignedIn = isSignedIn
            context.hints.value = isSignedIn
                ? ["Enter signs out"]
                : ["type email, password (6+)", "Enter on Sign in signs in"]
        }
        // The room is private to the connection: after a reconnect the server starts a fresh one,
        // so hand it what is typed again.
        context.room.observeChanges { [unowned context] change in
            guard case .snapshot(_, resynced: true) = change else { return }
            if !email.text.isEmpty { context.perform(login.setEmail, .init(value: email.text)) }
            if !password.text.isEmpty { context.perform(login.setPassword, .init(value: password.text)) }
        }.store(in: context.bag)
        body = Stack(.vertical, [form, signedIn])
    }

    /// The server's rule for `setEmail` and `setPassword` (the Login view model in TetherDemos,
    /// which this client does not link): enabled for an e-mail address and a password of at least
    /// 6 characters; `errorMessage` says what a typed field lacks.
    static func predictEmail(_ text: String) -> (inout LoginContract.State) -> Void {
        { state in
            state.email = text
            predictRule(&state)
        }
    }

    static func predictPassword(_ text: String) -> (inout LoginContract.State) -> Void {
        { state in
            state.passwordLength = text.count
            predictRule(&state)
        }
    }

    private static func predictRule(_ state: inout LoginContract.State) {
        let emailProblem = !state.email.isEmpty && !isEmailAddress(state.email)
        let passwordProblem = state.passwordLength > 0 && state.passwordLength < 6
        state.errorMessage = emailProblem ? emailMessage : passwordProblem ? shortPasswordMessage : nil
        state.signInEnabled = isEmailAddress(state.email) && state.passwordLength >= 6
    }

    static func isEmailAddress(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !text.contains(where: \.isWhitespace) else { return false }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2 && labels.allSatisfy { !$0.isEmpty }
    }

    static let emailMessage = "Enter an e-mail address such as name@example.com."
    static let shortPasswordMessage = "6자리 이상 비밀번호를 입력해주세요."

    /// English for the server's messages that come from the seeds in Korean; shown above them.
    static let english = [shortPasswordMessage: "Please enter a password of at least 6 characters."]
}
