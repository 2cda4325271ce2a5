import java.io.File;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/** Changes the file system through java.io.File and NIO, and prints what each call said. */
public class Changes {
    public static void main(String[] args) throws Exception {
        File d = new File("made");
        System.out.println("made: " + (d.exists() ? "exists" : "mkdir " + d.mkdir()));
        Path p = Path.of("nio");
        if (!Files.exists(p)) {
            Files.createDirectory(p);
        }
        System.out.println("nio: created");
        try {
            Files.delete(Path.of("nothere"));
            System.out.println("nothere: deleted");
        } catch (NoSuchFileException e) {
            System.out.println("nothere: no such file " + e.getFile());
        }
        System.out.println("gone: delete " + new File("gone").delete());
        Files.writeString(Path.of("nio/a.txt"), "x");
        Files.move(Path.of("nio/a.txt"), Path.of("nio/b.txt"));
        System.out.println("moved");
        System.out.println("renamed " + new File("nio/b.txt").renameTo(new File("made/c.txt")));
    }
}
