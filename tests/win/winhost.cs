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

// [WbRegOwner] (05-services.ps1's take_ownership) on the simulated machine:
// the script's own C# is compiled under another name by the Add-Type proxy
// (tests/win/proxies.ps1) and cannot run here (advapi32); this one does
// what it does to the state model's security records (registry_acl, see
// sim.ps1): Take gives Administrators the key and full control, inherited
// by keys created below, and returns the record as it was; Restore puts a
// record back. Each call is a line in $WBSIM_ROOT/../regowner.log.
public static class WbRegOwner {
    static string StatePath { get { return Environment.GetEnvironmentVariable("WBSIM_STATE"); } }

    static System.Text.Json.Nodes.JsonObject Records(out System.Text.Json.Nodes.JsonObject st) {
        st = System.Text.Json.Nodes.JsonNode.Parse(File.ReadAllText(StatePath)).AsObject();
        var acl = st["registry_acl"];
        if (acl == null)
            throw new InvalidOperationException("simulated registry: no security records");
        return acl.AsObject();
    }

    static void Save(System.Text.Json.Nodes.JsonObject st, string line) {
        string tmp = StatePath + ".tmp";
        File.WriteAllText(tmp, st.ToJsonString());
        File.Move(tmp, StatePath, true);
        File.AppendAllText(System.IO.Path.Combine(Environment.GetEnvironmentVariable("WBSIM_ROOT"), "..", "regowner.log"), line + "\n");
    }

    public static string Take(string key) {
        System.Text.Json.Nodes.JsonObject st;
        var recs = Records(out st);
        string l = key.ToLowerInvariant();
        if (recs[l] == null)
            throw new InvalidOperationException("simulated registry: '" + key + "' is not a key the model guards");
        string saved = recs[l].ToJsonString();
        var rec = new System.Text.Json.Nodes.JsonObject();
        rec["path"] = key;
        rec["owner"] = "Administrators";
        rec["admins"] = "full";
        rec["inherit"] = true;
        recs[l] = rec;
        Save(st, "take " + key);
        return saved;
    }

    public static void Restore(string key, string saved) {
        System.Text.Json.Nodes.JsonObject st;
        var recs = Records(out st);
        string l = key.ToLowerInvariant();
        if (recs[l] == null)
            throw new InvalidOperationException("simulated registry: '" + key + "' is not a key the model guards");
        recs[l] = System.Text.Json.Nodes.JsonNode.Parse(saved);
        Save(st, "restore " + key);
    }
}
