import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Loads the JNI library args[0] and reads args[1] through it (C's fopen: no JDK I/O), then
 * writes what it read into args[2] and prints only "done": its output does not show what it
 * read, as with a native image library writing a file.
 */
public class NativeRead {
    static native String read(String path);

    public static void main(String[] args) throws Exception {
        System.load(args[0]);
        Files.writeString(Path.of(args[2]), read(args[1]));
        System.out.println("done");
    }
}
