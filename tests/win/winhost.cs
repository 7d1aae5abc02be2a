// The engine tier's PowerShell host (tests/win/packer.ps1): a runspace per
// provisioner script, as powershell.exe is a process per script. `exit N`
// in a hosted runspace reaches the host as SetShouldExit(N); the console
// host turns it into the process's exit status, this one keeps it.
using System;
using System.Globalization;
using System.IO;
using System.Management.Automation.Host;

public class WbHost : PSHost {
    public int ExitCode = 0;
    public bool ShouldExit = false;
    private readonly Guid id = Guid.NewGuid();
    public override string Name { get { return "WinbuildEngineTier"; } }
    public override Version Version { get { return new Version(5, 1); } }
    public override Guid InstanceId { get { return id; } }
    public override PSHostUserInterface UI { get { return null; } }
    public override CultureInfo CurrentCulture { get { return CultureInfo.InvariantCulture; } }
    public override CultureInfo CurrentUICulture { get { return CultureInfo.InvariantCulture; } }
    public override void SetShouldExit(int exitCode) { ShouldExit = true; ExitCode = exitCode; }
    public override void EnterNestedPrompt() { throw new NotSupportedException(); }
    public override void ExitNestedPrompt() { throw new NotSupportedException(); }
    public override void NotifyBeginApplication() { }
    public override void NotifyEndApplication() { }
}

// [ADSI]"WinNT://HOST/Administrator,user" (08-sysprep.ps1): the type
// accelerator ADSI points here; each SetPassword is a line in
// $WBSIM_ROOT/../adsi.log that the end-state check reads.
public class WbAdsiUser {
    public string Path;
    public WbAdsiUser(string path) {
        if (!System.Text.RegularExpressions.Regex.IsMatch(path, "^WinNT://[^/]+/Administrator,user$"))
            throw new ArgumentException("simulated ADSI: '" + path + "' is not modelled");
        Path = path;
    }
    public void SetPassword(string password) {
        if (password == null || password.Length < 14)
            throw new InvalidOperationException("The password does not meet the password policy requirements.");
        File.AppendAllText(System.IO.Path.Combine(Environment.GetEnvironmentVariable("WBSIM_ROOT"), "..", "adsi.log"),
            "SetPassword " + Path + "\n");
    }
    public void SetInfo() { }
}
