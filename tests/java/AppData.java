import java.io.File;
import java.io.FileInputStream;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Enumeration;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.CRC32;

/**
 * A program whose data sits where its classes are: run as `cd app && java AppData` (class
 * path "."), it reads data.txt, lists its directory, reads a file through `../`, and reads a
 * class file and a jar as data (checksums, the jar's entries through JarFile and one entry's
 * text). Every one of those reads is the program's input, not class loading.
 */
public class AppData {
    public static void main(String[] args) throws Exception {
        System.out.println("data [" + new String(Files.readAllBytes(Path.of("data.txt"))).trim() + "]");
        System.out.println("data.txt length " + new File("data.txt").length()
            + " exists " + Files.exists(Path.of("data.txt")));
        try (Stream<Path> s = Files.list(Path.of("."))) {
            System.out.println("dir " + s.map(p -> p.getFileName().toString())
                .filter(n -> !n.endsWith(".replay")).sorted().collect(Collectors.toList()));
        }
        String[] names = new File(".").list();
        java.util.Arrays.sort(names);
        System.out.println("list " + String.join(",", names).replaceAll(",?[^,]*\\.replay", ""));
        try (InputStream in = new FileInputStream("../outside.txt")) {
            System.out.println("outside [" + new String(in.readAllBytes()).trim() + "]");
        }
        System.out.println("outside via app/.. [" + Files.readString(Path.of("../app/../outside.txt")).trim() + "]");
        System.out.println("Thing.class crc " + crc(Files.readAllBytes(Path.of("Thing.class")))
            + " mtime " + new File("Thing.class").lastModified());
        try (RandomAccessFile f = new RandomAccessFile("Thing.class", "r")) {
            System.out.println("Thing.class magic " + Integer.toHexString(f.readInt()) + " length " + f.length());
        }
        System.out.println("lib.jar crc " + crc(Files.readAllBytes(Path.of("lib.jar"))));
        try (JarFile jar = new JarFile("lib.jar")) {
            Enumeration<JarEntry> e = jar.entries();
            StringBuilder sb = new StringBuilder();
            while (e.hasMoreElements()) {
                JarEntry j = e.nextElement();
                sb.append(j.getName()).append(':').append(j.getSize()).append(' ');
            }
            System.out.println("jar " + sb.toString().trim());
            JarEntry n = jar.getJarEntry("note.txt");
            try (InputStream in = jar.getInputStream(n)) {
                System.out.println("note [" + new String(in.readAllBytes()).trim() + "]");
            }
        }
        // A resource of the program itself: class loading, live in both modes.
        System.out.println("own class resource " + (AppData.class.getResource("AppData.class") != null));
    }

    static String crc(byte[] b) {
        CRC32 c = new CRC32();
        c.update(b);
        return Long.toHexString(c.getValue());
    }
}
