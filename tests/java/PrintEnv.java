/**
 * Output that depends on what no hook covers: the environment variable X. Modes: "out"
 * (default) prints it between two fixed lines on stdout; "err" prints it on stderr; "exit"
 * prints nothing and exits with status X; "throw" ends with an uncaught exception naming it
 * (the JVM prints the trace through System.err); "bytes" writes it through a
 * FileOutputStream on FileDescriptor.out, one byte at a time for its last part; "child"
 * has a child print it to the inherited stdout, out of the agent's sight; "files" files. */
public class PrintEnv {
    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "out";
        String x = System.getenv("X");
        if (mode.equals("out")) {
            System.out.println("start");
            System.out.println("X=" + x);
            System.out.println("end");
        } else if (mode.equals("err")) {
            System.out.println("on stdout");
            System.err.println("X=" + x);
        } else if (mode.equals("exit")) {
            System.exit(Integer.parseInt(x));
        } else if (mode.equals("throw")) {
            throw new IllegalStateException("X=" + x);
        } else if (mode.equals("bytes")) {
            java.io.FileOutputStream out = new java.io.FileOutputStream(java.io.FileDescriptor.out);
            out.write("fixed\nX=".getBytes());
            for (byte b : x.getBytes()) {
                out.write(b);
            }
            out.write('\n');
        } else if (mode.equals("files")) {
            // X only in files: through a FileWriter (FileOutputStream by name) and NIO.
            try (java.io.FileWriter w = new java.io.FileWriter("io.txt")) {
                w.write("io X=" + x + "\n");
            }
            java.nio.file.Files.writeString(java.nio.file.Paths.get("nio.txt"), "nio " + x.length() + "\n");
            java.nio.file.Files.write(java.nio.file.Paths.get("same.txt"), java.util.List.of("fixed"));
            try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile("raf.bin", "rw")) {
                raf.write(x.getBytes());
                raf.write('\n');
            }
            System.out.println("written");
        } else if (mode.equals("child")) {
            new ProcessBuilder("sh", "-c", "echo child X=$X").inheritIO().start().waitFor();
            System.out.println("parent done");
        }
    }
}
