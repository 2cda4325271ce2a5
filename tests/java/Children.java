import java.io.*;
import java.nio.charset.StandardCharsets;

/**
 * Starts child processes the ways programs do: ProcessBuilder with separate and merged
 * output, Runtime.exec, a child fed on stdin, a child whose output the reaper drains after
 * it exits, a command that does not exist. Each child appends to runs.txt, so a test sees
 * whether replay started it.
 */
public class Children {
    static String read(InputStream in) throws IOException {
        return new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
    }

    public static void main(String[] args) throws Exception {
        String cat = args.length > 0 ? args[0] : "cat";
        Process p = new ProcessBuilder("sh", "-c",
                "echo ran >> runs.txt; " + cat + " data.txt; echo warning >&2; exit 3").start();
        String out = read(p.getInputStream());
        String err = read(p.getErrorStream());
        System.out.println("separate: out=" + out + " err=" + err + " status=" + p.waitFor());

        Process m = new ProcessBuilder("sh", "-c", "echo ran >> runs.txt; cat data.txt; ls missing-file")
                .redirectErrorStream(true).start();
        BufferedReader r = new BufferedReader(new InputStreamReader(m.getInputStream()));
        StringBuilder lines = new StringBuilder();
        for (String line; (line = r.readLine()) != null; ) lines.append('[').append(line.trim().startsWith("ls:") ? "ls failed" : line).append(']');
        System.out.println("merged: " + lines + " status=" + m.waitFor());

        Process f = new ProcessBuilder("sh", "-c", "echo ran >> runs.txt; wc -c").start();
        try (OutputStream o = f.getOutputStream()) {
            o.write(new byte[300_000]);
        }
        System.out.println("fed: " + read(f.getInputStream()) + " status=" + f.waitFor());

        // Exits before the program reads: the JDK's reaper drains the pipe into a buffer.
        Process e = Runtime.getRuntime().exec(new String[] {"sh", "-c", "echo ran >> runs.txt; date +%N"});
        int status = e.waitFor();
        Thread.sleep(50);
        System.out.println("exec: " + read(e.getInputStream()).length() + " digits, status=" + status);

        try {
            new ProcessBuilder("no-such-program-for-replay").start();
            System.out.println("started?");
        } catch (IOException x) {
            System.out.println("missing: " + (x.getMessage().contains("no-such-program-for-replay")));
        }
    }
}
